"""The platform's Kibana saved objects, written to docker/kibana/saved_objects.ndjson by
``python -m orchestration.wiring`` (with the compose file's per-site services).

The NDJSON is committed (the import, ``python -m orchestration.kibana``, needs no project
code) and tests/orchestration/test_wiring.py checks it is exactly what this module renders
from the site profiles, so edit this module or a profile, never the NDJSON.

Objects (stable ids, so re-importing with overwrite replaces them):

* data views ``items-*`` (time field ``last_seen``), ``chunks-*`` (``indexed_at``),
  ``jobs`` (the alias of platform-jobs-v1, ``finished_at``) and ``changes-*`` (``time``):
  the layouts of core.store, indexing.index, core.jobs_index and core.store.changes;
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

CORE_MIGRATION_VERSION = "8.8.0"
TYPE_MIGRATION_VERSIONS = {
    "index-pattern": "8.0.0",
    "lens": "8.9.0",
    "search": "10.5.0",
    "dashboard": "8.7.0",
}

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

LAYER = "layer1"


def saved_object(
    kind: str, object_id: str, attributes: dict[str, Any], references: list[dict[str, str]]
) -> dict[str, Any]:
    return {
        "type": kind,
        "id": object_id,
        "attributes": attributes,
        "references": references,
        "coreMigrationVersion": CORE_MIGRATION_VERSION,
        "typeMigrationVersion": TYPE_MIGRATION_VERSIONS[kind],
        "managed": False,
    }


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


# -- Lens columns ---------------------------------------------------------------------------


def date_histogram(field: str, label: str, interval: str = "auto") -> dict[str, Any]:
    return {
        "label": label,
        "customLabel": True,
        "dataType": "date",
        "operationType": "date_histogram",
        "sourceField": field,
        "isBucketed": True,
        "scale": "interval",
        "params": {"interval": interval, "includeEmptyRows": True, "dropPartials": False},
    }


def terms(field: str, label: str, size: int, order_by: dict[str, Any]) -> dict[str, Any]:
    return {
        "label": label,
        "customLabel": True,
        "dataType": "string",
        "operationType": "terms",
        "sourceField": field,
        "isBucketed": True,
        "scale": "ordinal",
        "params": {
            "size": size,
            "orderBy": order_by,
            "orderDirection": "desc",
            "otherBucket": True,
            "missingBucket": False,
            "parentFormat": {"id": "terms"},
            "include": [],
            "exclude": [],
            "includeIsRegex": False,
            "excludeIsRegex": False,
        },
    }


def metric(operation: str, field: str, label: str, data_type: str = "number") -> dict[str, Any]:
    column: dict[str, Any] = {
        "label": label,
        "customLabel": True,
        "dataType": data_type,
        "operationType": operation,
        "isBucketed": False,
        "scale": "ratio",
    }
    if operation == "count":
        column["sourceField"] = "___records___"
    else:
        column["sourceField"] = field
    if operation in ("count", "sum"):
        column["params"] = {"emptyAsNull": True}
    return column


def by_column(column_id: str) -> dict[str, Any]:
    return {"type": "column", "columnId": column_id}


def lens(
    object_id: str,
    title: str,
    description: str,
    data_view_id: str,
    columns: dict[str, dict[str, Any]],
    visualization_type: str,
    visualization: dict[str, Any],
    query: str = "",
) -> dict[str, Any]:
    state = {
        "visualization": visualization,
        "query": {"query": query, "language": "kuery"},
        "filters": [],
        "datasourceStates": {
            "formBased": {
                "layers": {
                    LAYER: {
                        "columns": columns,
                        "columnOrder": list(columns),
                        "incompleteColumns": {},
                        "sampling": 1,
                    }
                }
            }
        },
        "internalReferences": [],
        "adHocDataViews": {},
    }
    attributes = {
        "title": title,
        "description": description,
        "visualizationType": visualization_type,
        "state": state,
    }
    references = [
        {
            "type": "index-pattern",
            "id": data_view_id,
            "name": f"indexpattern-datasource-layer-{LAYER}",
        }
    ]
    return saved_object("lens", object_id, attributes, references)


def xy(
    series: str, x: str, accessors: list[str], split: str | None = None, legend: bool = True
) -> dict[str, Any]:
    layer: dict[str, Any] = {
        "layerId": LAYER,
        "layerType": "data",
        "seriesType": series,
        "xAccessor": x,
        "accessors": accessors,
        "position": "top",
        "showGridlines": False,
    }
    if split:
        layer["splitAccessor"] = split
    return {
        "legend": {"isVisible": legend, "position": "right"},
        "valueLabels": "hide",
        "fittingFunction": "None",
        "preferredSeriesType": series,
        "layers": [layer],
    }


def visualizations() -> list[dict[str, Any]]:
    jobs = "platform-jobs"
    per_day = "1d"
    return [
        lens(
            "platform-lens-items-per-site-day",
            "Items scraped per site per day",
            "Sum of each job's items_scraped, by the day the job finished.",
            jobs,
            {
                "day": date_histogram("finished_at", "Day", per_day),
                "items": metric("sum", "items_scraped", "Items scraped"),
                "site": terms("site", "Site", 10, by_column("items")),
            },
            "lnsXY",
            xy("bar_stacked", "day", ["items"], "site"),
        ),
        lens(
            "platform-lens-items-stored-per-site-day",
            "Items in the store per site, by last seen",
            "Item documents (items-*) by the day they were last crawled.",
            "platform-items",
            {
                "day": date_histogram("last_seen", "Day last seen", per_day),
                "items": metric("count", "", "Items"),
                "site": terms("site", "Site", 10, by_column("items")),
            },
            "lnsXY",
            xy("bar_stacked", "day", ["items"], "site"),
        ),
        lens(
            "platform-lens-new-changed-per-job",
            "New and changed items per job",
            "The latest jobs: items new and changed (dedup verdicts), status and duration.",
            jobs,
            {
                "job": terms("job_id", "Job", 50, by_column("finished")),
                "site": terms("site", "Site", 1, by_column("finished")),
                "finished": metric("max", "finished_at", "Finished", "date"),
                "new": metric("sum", "items_new", "New"),
                "changed": metric("sum", "items_changed", "Changed"),
                "unchanged": metric("sum", "items_unchanged", "Unchanged"),
            },
            "lnsDatatable",
            {
                "layerId": LAYER,
                "layerType": "data",
                "columns": [
                    {"columnId": column, "isTransposed": False}
                    for column in ("job", "site", "finished", "new", "changed", "unchanged")
                ],
                "sorting": {"columnId": "finished", "direction": "desc"},
            },
        ),
        lens(
            "platform-lens-block-rate",
            "Block rate per site over time",
            "Average of each job's block_rate (blocked responses / responses).",
            jobs,
            {
                "day": date_histogram("finished_at", "Job finished"),
                "rate": metric("average", "block_rate", "Block rate"),
                "site": terms("site", "Site", 10, by_column("rate")),
            },
            "lnsXY",
            xy("line", "day", ["rate"], "site"),
        ),
        lens(
            "platform-lens-job-durations",
            "Job durations per site",
            "Longest job duration (seconds) per site and time bucket.",
            jobs,
            {
                "day": date_histogram("finished_at", "Job finished"),
                "duration": metric("max", "duration_seconds", "Duration (s)"),
                "site": terms("site", "Site", 10, by_column("duration")),
            },
            "lnsXY",
            xy("bar", "day", ["duration"], "site"),
        ),
        lens(
            "platform-lens-job-statuses",
            "Job statuses",
            "Jobs by final status (completed, failed, ...).",
            jobs,
            {
                "day": date_histogram("finished_at", "Job finished"),
                "jobs": metric("count", "", "Jobs"),
                "status": terms("status", "Status", 10, by_column("jobs")),
            },
            "lnsXY",
            xy("bar_stacked", "day", ["jobs"], "status"),
        ),
        lens(
            "platform-lens-chunks-per-site-day",
            "Chunks indexed per site per day",
            "Chunks written by the LLM step (chunks-*), by the day they were indexed.",
            "platform-chunks",
            {
                "day": date_histogram("indexed_at", "Day", per_day),
                "chunks": metric("count", "", "Chunks"),
                "site": terms("site", "Site", 10, by_column("chunks")),
            },
            "lnsXY",
            xy("bar_stacked", "day", ["chunks"], "site"),
        ),
        lens(
            "platform-lens-price-history",
            "Price history",
            "Each recorded price change's new price (changes-*, field price) over time, per "
            'item; narrow it with the query bar, e.g. item_key : "demo:demo_product:DM-00001".',
            "platform-changes",
            {
                "time": date_histogram("time", "Changed"),
                "price": metric("average", "new_number", "Price"),
                "item": terms("item_key", "Item", 20, {"type": "alphabetical", "fallback": False}),
            },
            "lnsXY",
            xy("line", "time", ["price"], "item"),
            query='field : "price"',
        ),
        lens(
            "platform-lens-changes-per-kind",
            "Changes per kind per day",
            "Change documents (changes-*) by kind: price drops, back in stock, ...",
            "platform-changes",
            {
                "day": date_histogram("time", "Day", per_day),
                "changes": metric("count", "", "Changes"),
                "kind": terms("kind", "Kind", 10, by_column("changes")),
            },
            "lnsXY",
            xy("bar_stacked", "day", ["changes"], "kind"),
        ),
    ]


def dashboard(panels_of: list[dict[str, Any]]) -> dict[str, Any]:
    panels = []
    references = []
    width, height = 24, 15
    for number, visualization in enumerate(panels_of):
        panel_index = f"p{number + 1}"
        panels.append(
            {
                "version": CORE_MIGRATION_VERSION,
                "type": "lens",
                "gridData": {
                    "x": (number % 2) * width,
                    "y": (number // 2) * height,
                    "w": width,
                    "h": height,
                    "i": panel_index,
                },
                "panelIndex": panel_index,
                "embeddableConfig": {"enhancements": {}},
                "panelRefName": f"panel_{panel_index}",
            }
        )
        references.append(
            {
                "name": f"{panel_index}:panel_{panel_index}",
                "type": "lens",
                "id": visualization["id"],
            }
        )
    attributes = {
        "title": "Scraping platform",
        "description": "Items per site, new/changed items per job, block rate, job durations "
        "and statuses, chunks indexed, price history and changes per kind (generated by "
        "python -m orchestration.wiring).",
        "panelsJSON": json.dumps(panels, separators=(",", ":")),
        "optionsJSON": json.dumps(
            {
                "useMargins": True,
                "syncColors": False,
                "syncCursor": True,
                "syncTooltips": False,
                "hidePanelTitles": False,
            },
            separators=(",", ":"),
        ),
        "timeRestore": True,
        "timeFrom": "now-30d",
        "timeTo": "now",
        "refreshInterval": {"pause": True, "value": 60000},
        "kibanaSavedObjectMeta": {
            "searchSourceJSON": json.dumps(
                {"query": {"query": "", "language": "kuery"}, "filter": []},
                separators=(",", ":"),
            )
        },
        "version": 1,
    }
    return saved_object("dashboard", "platform-overview", attributes, references)


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
