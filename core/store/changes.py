"""Where change documents live (``changes-<site>``) and how one is written.

A change document records one history field of one item that a job saw change
(``core.recrawl.history``): its key, site, type, job, time, field, old and new value and the
change's kind (``price_drop``, ``back_in_stock``, ...). Per site::

    changes-<site>-v1   concrete index (index template ``changes``: the mapping below)
    changes-<site>      write alias (is_write_index): the store writes through it with
                        require_alias, as it writes items
    changes-*           every site's changes (Kibana's data view, searches)

``old``/``new`` are keywords (a string as it is, any other value as JSON); numeric values
are also in ``old_number``/``new_number``, so Kibana can chart a price over time.

Each document's ``_id`` is ``<item key>:<job>:<field>``: a job records a field of an item
once, and a re-delivered item rewrites the same document (every write is idempotent). The
write is a ``core.store.StoreAction``, so it goes through the same durable store as items
(bulk, spill, replay).
"""

from __future__ import annotations

import json
from typing import Any

from elasticsearch import AsyncElasticsearch, BadRequestError

from core.items_schema import DATE, DOUBLE, KEYWORD
from core.store.actions import StoreAction
from core.store.layout import cluster_replicas, doc_id_for, iso_ms

TEMPLATE = "changes"
ALL_SITES = "changes-*"
VERSION = 1

PROPERTIES: dict[str, Any] = {
    "item_key": dict(KEYWORD),
    "site": dict(KEYWORD),
    "item_type": dict(KEYWORD),
    "job_id": dict(KEYWORD),
    "time": dict(DATE),
    "field": dict(KEYWORD),
    "old": dict(KEYWORD),
    "new": dict(KEYWORD),
    "old_number": dict(DOUBLE),
    "new_number": dict(DOUBLE),
    "kind": dict(KEYWORD),
}


def changes_alias(site: str) -> str:
    """The write (and read) alias of a site's change documents."""
    return f"changes-{site}"


def changes_index(site: str) -> str:
    return f"changes-{site}-v{VERSION}"


def change_doc_id(key: str, job_id: str, field: str) -> str:
    """``<item key>:<job>:<field>`` (hashed when too long for Elasticsearch)."""
    return doc_id_for(f"{key}:{job_id}:{field}")


def keyword_value(value: Any) -> str | None:
    """``old``/``new`` as a keyword: a string as it is, anything else as JSON."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def number_value(value: Any) -> float | None:
    """The numeric value of ``value`` (booleans are not numbers here), else None."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def change_action(
    *,
    site: str,
    item_type: str,
    key: str,
    job_id: str,
    seen_ms: int,
    field: str,
    old: Any,
    new: Any,
    kind: str,
) -> StoreAction:
    """The write of one change document (see the module docstring).

    ``item_type`` is the item's: the store declares that type's index before it sends
    the action, never a ``changes`` one (``ensure_changes_index`` declares that).
    ``seen_ms`` (Redis' clock) is the document's time and version: when the change was
    seen, the same for every delivery of the item within the job.
    """
    document: dict[str, Any] = {
        "item_key": key,
        "site": site,
        "item_type": item_type,
        "job_id": job_id,
        "time": iso_ms(seen_ms),
        "field": field,
        "kind": kind,
    }
    for name, value in (("old", old), ("new", new)):
        if (text := keyword_value(value)) is not None:
            document[name] = text
        if (number := number_value(value)) is not None:
            document[f"{name}_number"] = number
    return StoreAction(
        key=key,
        site=site,
        item_type=item_type,
        doc_id=change_doc_id(key, job_id, field),
        index=changes_alias(site),
        version=seen_ms,
        document=document,
    )


def _template_body(replicas: int) -> dict[str, Any]:
    return {
        "index_patterns": [f"changes-*-v{VERSION}"],
        "priority": 200,
        "template": {
            "settings": {
                "number_of_shards": 1,
                "number_of_replicas": replicas,
                "refresh_interval": "1s",
            },
            "mappings": {"dynamic": "strict", "properties": PROPERTIES},
        },
        "meta": {"managed_by": "core.store.changes", "what": "change documents"},
    }


def _aliases(site: str) -> dict[str, Any]:
    return {changes_alias(site): {"is_write_index": True}}


async def ensure_changes_index(
    es: AsyncElasticsearch, site: str, *, replicas: int | None = None
) -> None:
    """Template, index and write alias of ``site``'s changes; idempotent.

    ``replicas`` None: one when the cluster has two or more data nodes, else none (as
    for items, ``core.store.layout``)."""
    await es.indices.put_index_template(
        name=TEMPLATE, **_template_body(await cluster_replicas(es, replicas))
    )
    try:
        await es.indices.create(index=changes_index(site), aliases=_aliases(site))
    except BadRequestError as exc:
        if exc.error != "resource_already_exists_exception":
            raise
        await es.indices.put_mapping(index=changes_index(site), properties=PROPERTIES)
        if not await es.indices.exists_alias(name=changes_alias(site)):
            await es.indices.put_alias(
                index=changes_index(site), name=changes_alias(site), is_write_index=True
            )


async def prepare_changes_index(es: AsyncElasticsearch, index: str) -> None:
    """The store's preparer for ``changes-<site>`` writes (``core.store.INDEX_PREPARERS``):
    any process replaying a spilled change document declares its index first, so an
    alias that does not exist yet never auto-creates an index with a dynamic mapping."""
    await ensure_changes_index(es, index.removeprefix("changes-"))
