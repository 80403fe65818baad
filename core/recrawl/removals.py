"""Removed items: an item not seen in K consecutive complete jobs is marked removed, and
restored when a later job sees it again.

``apply_job`` runs once a job has drained (the flow's ``mark-removed`` step): every key
dedup knows is checked against the job's verdicts and invalid items in HSCAN batches;
a seen key is reset (restored if it was removed), an unseen one gets a miss only when the
job is complete, and K misses mark it removed; Elasticsearch is updated from a pending
queue (``removed_at``, chunks deleted). Idempotent per job. No Scrapy, no Prefect.

Reads: Redis (``item_hashes``, the job's keys), the profile's ``[recrawl]
removed_after_jobs``. Rules: docs/recrawl.md "Removed items".
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, cast

from elasticsearch import Elasticsearch, NotFoundError
from elasticsearch.helpers import scan

from core.figures.ledger import job_figures
from core.figures.stats import STATS_TTL_SECONDS, JobStats, unparsed_pages
from core.frontier.budget import reached_text
from core.items_schema import DATE
from core.keys import SiteKeys
from core.lua import load_script
from core.redis_client import Client
from core.store.layout import IndexLayout, doc_id_for, index_for_key, iso_ms

REMOVED, RESTORED = "removed", "restored"
SCAN_BATCH = 500
# The chunks index of a site (indexing.index.chunks_index; core cannot import indexing).
CHUNKS_PREFIX = "chunks-"

# Job counters that mean a page's items may have gone unseen: retries ran out (blocks,
# errors, network), an errback gave up on a request, a callback raised, an item never
# became durable. Summed from the workers' counters (``core.figures.stats``). One request
# failed for good shows in several of them (``failed_requests``).
GAVE_UP_PREFIX = "fetch/gave_up/"  # the retry layer gave up; the failure then reaches the errback
ERRBACK_PREFIX = "errors/request_failed/"  # an errback's count by exception class
ERRBACK_SUFFIX = "/request_failed"  # a spider's own count (e.g. demo/request_failed)
FAILED_PREFIXES = ("spider_exceptions/",)  # a callback raised: a page of its own
# ``requests/failed``: a leased request dropped with its page lost (crawlers.frontier.fates).
FAILED_NAMES = ("frontier/item_error_gave_up", "requests/failed")

# Lua, each script headed by its KEYS and ARGV: core/recrawl/lua/removals_*.lua
_APPLY = load_script("core.recrawl", "removals_apply")
_DONE = load_script("core.recrawl", "removals_done")


class RemovalSyncError(RuntimeError):
    """Elasticsearch refused some removed_at updates or chunk deletes; they stay pending
    and the step (or the next job's) applies them again."""


@dataclass(frozen=True)
class RemovalReport:
    """What the mark-removed step did for a job (``as_dict`` is what the report shows)."""

    site: str
    job_id: str
    removed: int = 0  # keys this job marked removed
    restored: int = 0  # removed keys this job saw again
    misses_counted: bool = False
    skipped: str | None = None  # why misses were not counted (None: they were)
    checked: int = 0  # item keys checked in the run that applied the job
    documents_updated: int = 0  # item documents given or cleared removed_at
    chunks_deleted: int = 0
    replayed: bool = False  # the job was applied before: only reported again

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        reason = f"misses not counted: {self.skipped}" if self.skipped else "misses counted"
        counts = f"{self.removed} removed, {self.restored} restored"
        return f"{self.site}/{self.job_id}: {counts} ({reason})"


def failed_requests(counters: Mapping[str, int]) -> int:
    """Requests of the job that failed for good, by its counters, each counted once.

    An errback counts its request under ``errors/request_failed/<class>``, under
    ``<spider>/request_failed``, or both (a generic spider does both), and a request the
    retry layer gave up on (``fetch/gave_up/<kind>``) reaches that errback as well: the
    largest of the three is the number of requests. A callback that raised and an item
    that never became durable are requests of their own."""

    def total(test: Callable[[str], bool]) -> int:
        return sum(int(value) for name, value in counters.items() if test(name))

    errback = max(
        total(lambda name: name.startswith(ERRBACK_PREFIX)),
        total(lambda name: name.endswith(ERRBACK_SUFFIX)),
        total(lambda name: name.startswith(GAVE_UP_PREFIX)),
    )
    return errback + total(lambda name: name.startswith(FAILED_PREFIXES) or name in FAILED_NAMES)


def skip_reason(server: Client, site: str, job_id: str, *, finished: bool = True) -> str | None:
    """Why the job must not count misses (None: it may). Only a finished job that saw
    items, with no page refused by the site (the ledger's exact ``pages/refused``: a
    block its retries never got past; a challenge passed is no loss) and no request
    failed for good, saw the whole site."""
    if not finished:
        return "the job did not finish"
    figures = job_figures(server, site, job_id)
    reasons = []
    if figures["pages/refused"]:
        reasons.append(f"{figures['pages/refused']} page(s) refused by the site")
    counters = JobStats(server, site).get(job_id)
    failed = failed_requests(counters)
    if failed:
        reasons.append(f"{failed} request(s) failed for good")
    # A page fetched but unreadable says nothing about whether its item still exists.
    unparsed = sum(unparsed_pages(counters).values())
    if unparsed:
        reasons.append(f"{unparsed} page(s) could not be parsed")
    # A crawl cut short by a budget or a link cap did not look at the whole site.
    budgets = reached_text(counters)
    if budgets:
        reasons.append(f"crawl budget reached: {budgets}")
    capped = int(counters.get("links/capped", 0))
    if capped:
        reasons.append(f"{capped} link(s) over the per-page cap not followed")
    if not reasons and not figures["items/scraped"]:
        reasons.append("the job saw no items")
    return "; ".join(reasons) or None


def apply_job(
    server: Client,
    es: Elasticsearch,
    site: str,
    job_id: str,
    *,
    removed_after_jobs: int,
    finished: bool = True,
) -> RemovalReport:
    """Count the job's misses, mark and restore, mirror to Elasticsearch (module docstring).

    ``finished``: the job drained (not failed, not cancelled); restorations apply either
    way. Redis and Elasticsearch errors propagate: the step is safe to run again."""
    if removed_after_jobs < 1:
        raise ValueError("removed_after_jobs must be at least 1")
    keys = SiteKeys(site)
    recorded = server.hget(keys.removal_jobs, job_id)
    if recorded is not None:
        updated, deleted = sync_pending(server, es, site)
        report = RemovalReport(**json.loads(recorded))
        return _replace(report, replayed=True, documents_updated=updated, chunks_deleted=deleted)
    started_ms = _started_ms(server, site, job_id)
    stale = _newer_job_applied(server, site, job_id, started_ms)
    if stale:
        report = RemovalReport(site, job_id, skipped=f"job {stale}, started later, was applied")
        server.hset(keys.removal_jobs, job_id, json.dumps(report.as_dict()))
        return report
    _begin(server, site, job_id, started_ms)

    reason = skip_reason(server, site, job_id, finished=finished)
    script = server.register_script(_APPLY)
    script_keys = [
        keys.job_verdicts(job_id),
        keys.job_invalid(job_id),
        keys.removal_misses,
        keys.removed,
        keys.job_removed(job_id),
        keys.job_restored(job_id),
        keys.removal_pending,
        keys.item_first_seen,
    ]
    checked = 0
    for batch in _hash_keys(server, keys.item_hashes):
        args = [
            job_id,
            removed_after_jobs,
            "0" if reason else "1",
            "" if started_ms is None else started_ms,
            STATS_TTL_SECONDS,
            *batch,
        ]
        script(keys=script_keys, args=args)
        checked += len(batch)
    updated, deleted = sync_pending(server, es, site)
    removed, restored = _job_counts(server, site, job_id)
    report = RemovalReport(
        site,
        job_id,
        removed=removed,
        restored=restored,
        misses_counted=reason is None,
        skipped=reason,
        checked=checked,
        documents_updated=updated,
        chunks_deleted=deleted,
    )
    server.hset(keys.removal_jobs, job_id, json.dumps(report.as_dict()))
    return report


# -- reading ------------------------------------------------------------------------------


def restored_keys(server: Client, site: str, job_id: str) -> frozenset[str]:
    """Keys the job restored (for the LLM step: their chunks were deleted)."""
    return frozenset(_text(key) for key in server.smembers(SiteKeys(site).job_restored(job_id)))


def removal_figures(server: Client, site: str, job_id: str) -> dict[str, int]:
    """``items/removed`` and ``items/restored`` of the job (exact: its key sets)."""
    removed, restored = _job_counts(server, site, job_id)
    return {"items/removed": removed, "items/restored": restored}


def removed_at(server: Client, site: str, key: str) -> int | None:
    """Epoch ms the key was marked removed, None if it is not."""
    value = server.hget(SiteKeys(site).removed, key)
    return None if value is None else int(value)


def job_report(server: Client, site: str, job_id: str) -> RemovalReport | None:
    """The recorded result of the job's mark-removed step, None if it never completed."""
    recorded = server.hget(SiteKeys(site).removal_jobs, job_id)
    return None if recorded is None else RemovalReport(**json.loads(recorded))


# -- Elasticsearch ------------------------------------------------------------------------


def sync_pending(server: Client, es: Elasticsearch, site: str) -> tuple[int, int]:
    """Apply every pending removal/restoration to Elasticsearch; returns (documents
    updated, chunks deleted). Entries are forgotten only once applied."""
    keys = SiteKeys(site)
    updated = deleted = 0
    mapped = False
    done = server.register_script(_DONE)
    cursor = 0
    while True:
        cursor, raw = server.hscan(keys.removal_pending, cursor, count=SCAN_BATCH)
        # A list only with no_values=True; here always the hash's fields and values.
        pairs = cast(dict[bytes | str, bytes | str], raw)
        batch = {_text(key): _text(action) for key, action in pairs.items()}
        if batch:
            if not mapped:
                _ensure_mapping(es, site)
                mapped = True
            n_docs, n_chunks = _sync_batch(server, es, site, batch)
            updated += n_docs
            deleted += n_chunks
            done(keys=[keys.removal_pending], args=[v for pair in batch.items() for v in pair])
        if cursor == 0:
            break
    if mapped:
        es.indices.refresh(index=IndexLayout.read_alias(site), ignore_unavailable=True)
    return updated, deleted


def _sync_batch(
    server: Client, es: Elasticsearch, site: str, batch: Mapping[str, str]
) -> tuple[int, int]:
    ordered = sorted(batch)
    stamps = dict(zip(ordered, server.hmget(SiteKeys(site).removed, ordered), strict=True))
    operations: list[dict[str, Any]] = []
    gone = []
    for key in ordered:
        stamp = stamps[key]
        # The removed hash is the truth: a pending "removed" already restored is cleared.
        when = iso_ms(int(stamp)) if batch[key] == REMOVED and stamp is not None else None
        if when is not None:
            gone.append(key)
        # require_alias: an update never auto-creates an index where the store's alias
        # belongs (no alias: 404, nothing stored to mark).
        target = {"_index": index_for_key(key), "_id": doc_id_for(key), "require_alias": True}
        operations.append({"update": target})
        operations.append({"doc": {"removed_at": when}})
    updated = _bulk(es, operations)
    return updated, _delete_chunks(es, site, gone)


def _bulk(es: Elasticsearch, operations: Sequence[dict[str, Any]]) -> int:
    """Send update/delete operations; 404 (no such document or index) is fine: nothing to
    mark. Returns the operations applied; anything else refused raises."""
    if not operations:
        return 0
    response = es.bulk(operations=operations)
    applied, errors = 0, []
    for entry in response["items"]:
        ((op, result),) = entry.items()
        if result.get("status", 500) < 300:
            applied += 1
        elif result.get("status") != 404:
            errors.append(f"{op} {result.get('_id')}: {result.get('status')} {result.get('error')}")
    if errors:
        raise RemovalSyncError(f"{len(errors)} writes refused, e.g. {errors[0]}")
    return applied


def _delete_chunks(es: Elasticsearch, site: str, item_keys: Sequence[str]) -> int:
    """Delete the chunks of ``item_keys`` (the node has no ``_delete_by_query``: their ids
    come from a ``terms`` search on ``item_key``)."""
    if not item_keys:
        return 0
    index = CHUNKS_PREFIX + site
    try:
        hits = list(
            scan(
                es,
                index=index,
                query={"query": {"terms": {"item_key": list(item_keys)}}, "_source": False},
                size=1000,
            )
        )
    except NotFoundError:
        return 0  # no chunks index yet
    operations = [{"delete": {"_index": index, "_id": hit["_id"]}} for hit in hits]
    deleted = _bulk(es, operations)
    if operations:
        es.indices.refresh(index=index)
    return deleted


def _ensure_mapping(es: Elasticsearch, site: str) -> None:
    """``removed_at`` on the site's item indices (the store adds it to new ones; an index
    made before it existed gets it here)."""
    with contextlib.suppress(NotFoundError):  # no item index: nothing to mark either
        es.indices.put_mapping(
            index=IndexLayout.read_alias(site), properties={"removed_at": dict(DATE)}
        )


# -- helpers ------------------------------------------------------------------------------


def _hash_keys(server: Client, name: str) -> Iterator[list[str]]:
    """The fields of a hash in HSCAN batches (never one giant HGETALL)."""
    cursor = 0
    while True:
        cursor, raw = server.hscan(name, cursor, count=SCAN_BATCH)
        if raw:
            yield [_text(key) for key in raw]
        if cursor == 0:
            return


def _started_ms(server: Client, site: str, job_id: str) -> int | None:
    """When the producer started the job, by Redis' clock (None: unknown)."""
    score = server.zscore(SiteKeys(site).jobs, job_id)
    return None if score is None else int(float(score) * 1000)


def _newer_job_applied(
    server: Client, site: str, job_id: str, started_ms: int | None
) -> str | None:
    """The id of a job started after ``job_id`` whose misses were already applied."""
    last = {_text(k): _text(v) for k, v in server.hgetall(SiteKeys(site).removal_last).items()}
    other, other_ms = last.get("job"), last.get("started_ms")
    if not other or other == job_id or started_ms is None or not other_ms:
        return None
    return other if started_ms < int(other_ms) else None


def _begin(server: Client, site: str, job_id: str, started_ms: int | None) -> None:
    """Record the job as the one being applied. An earlier job that never completed its
    step is superseded: its retry must not count misses this job already judged."""
    keys = SiteKeys(site)
    previous = server.hget(keys.removal_last, "job")
    if previous is not None and _text(previous) != job_id:
        earlier = _text(previous)
        superseded = RemovalReport(site, earlier, skipped=f"superseded by job {job_id}")
        server.hsetnx(keys.removal_jobs, earlier, json.dumps(superseded.as_dict()))
    server.hset(
        keys.removal_last,
        mapping={"job": job_id, "started_ms": "" if started_ms is None else str(started_ms)},
    )


def _job_counts(server: Client, site: str, job_id: str) -> tuple[int, int]:
    keys = SiteKeys(site)
    with server.pipeline(transaction=False) as pipe:
        pipe.scard(keys.job_removed(job_id))
        pipe.scard(keys.job_restored(job_id))
        removed, restored = pipe.execute()
    return int(removed), int(restored)


def _replace(report: RemovalReport, **changes: Any) -> RemovalReport:
    return RemovalReport(**{**report.as_dict(), **changes})


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
