"""The platform's Kibana saved objects, written to docker/kibana/saved_objects.ndjson by
``python -m orchestration.wiring`` (with the compose file's per-site services).

The NDJSON is committed (the import, ``python -m orchestration.kibana``, needs no project
code) and tests/orchestration/test_wiring.py checks it is exactly what this module renders
from the site profiles, so edit this module (the dashboard and its Lens visualizations:
``orchestration.kibana_dashboard``) or a profile, never the NDJSON.

Objects (stable ids, so re-importing with overwrite replaces them):

* data views ``items-*`` (time field ``last_seen``), ``chunks-*`` (``indexed_at``),
  ``jobs`` (the alias of platform-jobs-v1, ``finished_at``) and ``changes-*`` (``time``):
  the layouts of core.store, indexing.index, core.jobs.index and core.store.changes;
* Lens visualizations and the dashboard "Scraping platform": items per site per day,
  new/changed per job, block rate per site over time, job durations and statuses,
  chunks indexed per site per day, price history per item and changes per kind;
* one saved search per site profile (crawlers/profiles/<site>.toml) over ``items-*``,
  filtered ``site : "<site>"``, with the columns of the profile's ``item_type``
  (``COLUMNS_BY_ITEM_TYPE``; an item type not listed there shows its required and history
  fields).

Formats are Kibana 8.x saved objects (``coreMigrationVersion`` 8.8.0 plus each type's
version); Kibana 9 migrates them on import.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from crawlers.items import schema_by_type
from crawlers.profiles import PROFILES_DIR, load_profiles
from orchestration.kibana_dashboard import dashboard, saved_object, visualizations

DATA_VIEWS = {
    # id: (title = index pattern, name, time field)
    "platform-items": ("items-*", "Items (all sites)", "last_seen"),
    "platform-chunks": ("chunks-*", "Chunks (LLM index)", "indexed_at"),
    "platform-jobs": ("jobs", "Crawl jobs", "finished_at"),
    "platform-changes": ("changes-*", "Item changes (history)", "time"),
}

# Discover columns per item type: the fields an operator scans first.
COLUMNS_BY_ITEM_TYPE = {
    "demo_product": ["name", "brand", "category", "price", "currency", "availability", "rating"],
    "product": ["name", "brand", "category", "price", "currency", "availability"],
    "property_listing": ["title", "operation", "property_type", "price", "currency", "city"],
    "review": ["subject.name", "rating", "title", "author", "published_at"],
    "hotel": ["name", "city", "star_rating", "review_score", "price", "currency"],
    "marketplace_listing": ["title", "price", "currency", "condition", "location_name"],
}
COMMON_COLUMNS = ["url", "job_id", "last_changed"]
# Columns of an item type COLUMNS_BY_ITEM_TYPE does not list: its required and history fields.
DEFAULT_COLUMN_COUNT = 6


def data_view(object_id: str) -> dict[str, Any]:
    title, name, time_field = DATA_VIEWS[object_id]
    attributes = {
        "title": title,
        "name": name,
        "timeFieldName": time_field,
        "allowHidden": False,
        "fieldAttrs": "{}",
        "fieldFormatMap": "{}",
        "fields": "[]",
        "runtimeFieldMap": "{}",
        "sourceFilters": "[]",
    }
    return saved_object("index-pattern", object_id, attributes, [])


def item_types(directory: Path = PROFILES_DIR) -> dict[str, str]:
    """Site -> item type, one per site profile, sorted by site."""
    return {profile.site: profile.item_type for profile in load_profiles(directory)}


def columns_of(item_type: str) -> list[str]:
    """Discover columns of an item type: the listed ones, else its required and history
    fields (the common columns follow either way)."""
    if item_type in COLUMNS_BY_ITEM_TYPE:
        return COLUMNS_BY_ITEM_TYPE[item_type] + COMMON_COLUMNS
    schema = schema_by_type(item_type)
    wanted = [*schema.required, *schema.history]
    fields = [name for name in dict.fromkeys(wanted) if name not in COMMON_COLUMNS]
    return fields[:DEFAULT_COLUMN_COUNT] + COMMON_COLUMNS


def saved_search(site: str, item_type: str) -> dict[str, Any]:
    search_source = {
        "query": {"query": f'site : "{site}"', "language": "kuery"},
        "filter": [],
        "indexRefName": "kibanaSavedObjectMeta.searchSourceJSON.index",
    }
    attributes = {
        "title": f"Items: {site}",
        "description": f"Every {item_type} item of {site}, most recently crawled first.",
        "columns": columns_of(item_type),
        "sort": [["last_seen", "desc"]],
        "grid": {},
        "hideChart": False,
        "isTextBasedQuery": False,
        "kibanaSavedObjectMeta": {
            "searchSourceJSON": json.dumps(search_source, separators=(",", ":"))
        },
    }
    references = [
        {
            "name": "kibanaSavedObjectMeta.searchSourceJSON.index",
            "type": "index-pattern",
            "id": "platform-items",
        }
    ]
    return saved_object("search", f"platform-items-{site}", attributes, references)


def saved_objects(directory: Path = PROFILES_DIR) -> list[dict[str, Any]]:
    # Referenced objects first: data views, visualizations, then what uses them.
    objects = [data_view(object_id) for object_id in DATA_VIEWS]
    lenses = visualizations()
    objects += lenses
    objects.append(dashboard(lenses))
    objects += [saved_search(site, kind) for site, kind in item_types(directory).items()]
    return objects


def render(directory: Path = PROFILES_DIR) -> str:
    """The NDJSON file's text: one saved object a line."""
    objects = saved_objects(directory)
    lines = [json.dumps(obj, sort_keys=True, separators=(",", ":")) for obj in objects]
    return "\n".join(lines) + "\n"
