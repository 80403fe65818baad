"""Search health: is Elasticsearch reachable, and is each site's index fresh?

Per site (every ``site`` found in ``items-*`` or ``chunks-*``):

* ``items``: documents, newest ``last_seen`` (when a crawl last stored an item) and newest
  ``last_changed``;
* ``chunks``: documents, newest ``indexed_at`` (when the LLM step last wrote), newest
  ``item_last_changed`` of the chunked items, and the embedder the index was built with.

A site is **stale** when its items were last seen longer ago than ``stale_after`` (its
scrapes stopped landing), when it has items but no chunks, or when the newest item change
is newer than the newest chunked change (the LLM step has not caught up with a job).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from typing import Any

from elastic_transport import TransportError
from elasticsearch import ApiError, Elasticsearch

from core.es_access import auth_line, client_kwargs, is_auth_error
from core.store import items_index
from indexing.index import CHUNKS_PREFIX, index_embedder

DEFAULT_STALE_AFTER = dt.timedelta(days=8)  # the weekly sites scrape every 7 days


@dataclass
class IndexFreshness:
    index: str
    documents: int = 0
    latest: str | None = None  # items: last_seen; chunks: indexed_at (ISO 8601)
    latest_change: str | None = None  # items: last_changed; chunks: item_last_changed
    embedder: str | None = None  # chunks only
    dims: int | None = None  # chunks only


@dataclass
class SiteHealth:
    site: str
    items: IndexFreshness
    chunks: IndexFreshness
    stale: bool = False
    reasons: list[str] = field(default_factory=list)


@dataclass
class Health:
    status: str  # ok | stale | down | denied (ES refused the credentials)
    elasticsearch: dict[str, Any]
    stale_after_seconds: float
    checked_at: str
    sites: dict[str, SiteHealth] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_health(
    es: Elasticsearch,
    *,
    stale_after: dt.timedelta = DEFAULT_STALE_AFTER,
    now: dt.datetime | None = None,
) -> Health:
    now = now or dt.datetime.now(dt.UTC)
    health = Health(
        status="ok",
        elasticsearch={"reachable": False},
        stale_after_seconds=stale_after.total_seconds(),
        checked_at=_iso(now),
    )
    try:
        info = es.info()
        health.elasticsearch = {"reachable": True, "version": info["version"]["number"]}
        items = _by_site(es, items_index(), "last_seen", "last_changed")
        chunks = _by_site(es, f"{CHUNKS_PREFIX}*", "indexed_at", "item_last_changed")
    except (TransportError, ApiError) as exc:
        health.status = "down"
        health.elasticsearch = {"reachable": False, "error": type(exc).__name__}
        if is_auth_error(exc):
            # It answered: the credentials (401) or their privileges (403) are the problem.
            assert isinstance(exc, ApiError)
            health.status = "denied"
            health.elasticsearch = {
                "reachable": True,
                "error": type(exc).__name__,
                "problem": auth_line(exc.meta.status, client_kwargs(es)),
            }
        return health
    for site in sorted(set(items) | set(chunks)):
        site_items = items.get(site) or IndexFreshness(index=items_index(site))
        site_chunks = chunks.get(site) or IndexFreshness(index=f"{CHUNKS_PREFIX}{site}")
        if site_chunks.documents:
            recorded = index_embedder(es, site_chunks.index)
            if recorded is not None:
                site_chunks.embedder, site_chunks.dims = recorded
        entry = SiteHealth(site=site, items=site_items, chunks=site_chunks)
        entry.reasons = _stale_reasons(entry, stale_after, now)
        entry.stale = bool(entry.reasons)
        health.sites[site] = entry
    if any(entry.stale for entry in health.sites.values()):
        health.status = "stale"
    return health


def _by_site(
    es: Elasticsearch, pattern: str, latest: str, change: str
) -> dict[str, IndexFreshness]:
    response = es.search(
        index=pattern,
        size=0,
        aggs={
            "sites": {
                "terms": {"field": "site", "size": 1000},
                "aggs": {
                    "latest": {"max": {"field": latest}},
                    "change": {"max": {"field": change}},
                },
            }
        },
        ignore_unavailable=True,
        allow_no_indices=True,
    )
    buckets = response.body.get("aggregations", {}).get("sites", {}).get("buckets", [])
    prefix = pattern.rstrip("*")
    return {
        bucket["key"]: IndexFreshness(
            index=f"{prefix}{bucket['key']}",
            documents=int(bucket["doc_count"]),
            latest=bucket["latest"].get("value_as_string"),
            latest_change=bucket["change"].get("value_as_string"),
        )
        for bucket in buckets
    }


def _stale_reasons(entry: SiteHealth, stale_after: dt.timedelta, now: dt.datetime) -> list[str]:
    reasons = []
    last_seen = _parse(entry.items.latest)
    if entry.items.documents and last_seen is not None and now - last_seen > stale_after:
        reasons.append(f"items last seen {_age(now - last_seen)} ago (limit {_age(stale_after)})")
    if entry.items.documents and not entry.chunks.documents:
        reasons.append("items but no chunks: the LLM step has not run for this site")
    item_change = _parse(entry.items.latest_change)
    chunk_change = _parse(entry.chunks.latest_change)
    if item_change and chunk_change and item_change > chunk_change:
        reasons.append(
            f"chunks behind items: newest item change {entry.items.latest_change}, newest "
            f"chunked change {entry.chunks.latest_change}"
        )
    return reasons


def _parse(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _iso(moment: dt.datetime) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def _age(delta: dt.timedelta) -> str:
    hours = delta.total_seconds() / 3600
    return f"{hours / 24:.1f}d" if hours >= 48 else f"{hours:.1f}h"
