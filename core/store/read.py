"""The one read path of stored items, for the LLM step, search and health checks (sync).

* ``get_items(es, keys)``: documents by item key, real time (``mget``: no refresh needed
  right after the store's last bulk), any mix of sites and types;
* ``job_items(es, server, site, job_id)``: the documents of the job's new and changed
  items (``core.dedup.detector.job_changes``);
* ``item_keys(es, site)``: every stored item key of a site (a scan; for backfills);
* ``extracted_by_job(es, site, job_id)``: the documents of the items the job extracted
  from their pages (``extracted_job_id``: a full write, not a touch of an item seen
  unchanged by a 304 or its listing card), what field coverage is judged on;
* ``items_index(site)``: what to search, the site's read alias ``items-<site>`` or, with
  no site, every site's items (``items-*``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import redis
from elasticsearch import Elasticsearch
from elasticsearch.helpers import scan

from core.dedup.detector import job_changes
from core.store.layout import IndexLayout, doc_id_for, index_for_key


def items_index(site: str | None = None) -> str:
    """The index pattern to search: one site's read alias, or every site's items."""
    return IndexLayout.all_sites if site is None else IndexLayout.read_alias(site)


def get_items(
    es: Elasticsearch, keys: Iterable[str], *, site: str | None = None
) -> dict[str, dict[str, Any]]:
    """Stored documents by item key, in one ``mget``; keys without a document (never
    stored, dead-lettered) are left out. ``site``: keep only that site's keys.

    (``mget`` on the read alias ``items-<site>`` fails once a site has several item
    types; each key names its type, so each document is fetched from its own alias.)
    """
    wanted = [key for key in dict.fromkeys(keys) if _well_formed(key, site)]
    if not wanted:
        return {}
    response = es.mget(
        docs=[{"_index": index_for_key(key), "_id": doc_id_for(key)} for key in wanted]
    )
    return {
        key: doc["_source"]
        for key, doc in zip(wanted, response["docs"], strict=True)
        if doc.get("found")
    }


def item_keys(es: Elasticsearch, site: str) -> list[str]:
    """Every stored item key of ``site`` (a scroll over its read alias)."""
    return [
        hit["_source"]["item_key"]
        for hit in scan(
            es,
            index=items_index(site),
            query={"query": {"match_all": {}}, "_source": ["item_key"]},
            size=1000,
        )
    ]


def extracted_by_job(es: Elasticsearch, site: str, job_id: str) -> Iterator[dict[str, Any]]:
    """The stored documents the job extracted from their pages: written in full by it
    (``extracted_job_id``); the documents it only touched, items seen unchanged without
    their page, are not. A scroll over ``items-<site>``, refreshed first (the job's last
    bulk may not be searchable yet); a site that never stored an item has none."""
    index = items_index(site)
    es.indices.refresh(index=index, ignore_unavailable=True, allow_no_indices=True)
    for hit in scan(
        es,
        index=index,
        query={"query": {"term": {"extracted_job_id": job_id}}},
        size=1000,
        ignore_unavailable=True,
        allow_no_indices=True,
    ):
        yield hit["_source"]


def job_items(
    es: Elasticsearch, server: redis.Redis, site: str, job_id: str
) -> dict[str, dict[str, Any]]:
    """The stored documents of the items the job found new or changed."""
    return get_items(es, job_changes(server, site, job_id).new_or_changed, site=site)


def _well_formed(key: str, site: str | None) -> bool:
    """An item key ``<site>:<item type>:<stable id>`` (of ``site``, if given)."""
    parts = key.split(":", 2)
    return len(parts) == 3 and all(parts) and (site is None or parts[0] == site)
