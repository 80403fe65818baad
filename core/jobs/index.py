"""The jobs index: one document per crawl job (site, job id, times, status, counters).

Written at the end of a job, for history and Kibana dashboards. ``platform-jobs-v1``
behind the alias ``jobs`` (template ``platform-jobs``); the document id is
``<site>:<job id>``, so writing a job again (a retried report step) replaces it.

``write_job_document(es, site, job_id, status, started_at, finished_at, counters)`` is
what the orchestration flow calls after the drain; ``counters`` are the job's counters
(``job_counters``: the workers' summed counters with the exact figures of the job's
ledger, ``core.figures.ledger``), or a single crawl's Scrapy stats. Headline
numbers are lifted out of them into typed fields; all of them are kept in ``counters``
(a ``flattened`` field: any counter name, no mapping explosion).

Every document says how the job ended: ``close_reason`` (``finished``, ``refused``,
``nothing_stored``, ``store_failed``, ``elasticsearch_auth``, a budget's ``budget_pages``
/ ``budget_time``) and ``outcome``, the one line saying why (``core.jobs.outcome``). A local
crawl passes its own verdict (Scrapy's ``finish_reason``); a job's is judged from its
counters here, the same way.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from elasticsearch import AsyncElasticsearch, BadRequestError, ConflictError, Elasticsearch

from core.fetch.refusal import KINDS, Presented, refusal
from core.figures.ledger import job_figures
from core.figures.stats import JobStats, unparsed_pages
from core.frontier.budget import reached_text
from core.items_schema import DATE, KEYWORD
from core.jobs.outcome import job_reason, judge
from core.keys import SiteKeys
from core.recrawl.removals import removal_figures
from core.redis_client import Client
from core.store.layout import cluster_replicas, cluster_replicas_sync

JOBS_ALIAS = "jobs"
JOBS_INDEX = "platform-jobs-v1"
JOBS_TEMPLATE = "platform-jobs"

_LONG = {"type": "long"}
JOBS_PROPERTIES: dict[str, Any] = {
    "site": dict(KEYWORD),
    "job_id": dict(KEYWORD),
    "status": dict(KEYWORD),
    "started_at": dict(DATE),
    "finished_at": dict(DATE),
    "duration_seconds": {"type": "double"},
    "requests": _LONG,
    "responses": _LONG,
    "blocks": _LONG,
    "block_rate": {"type": "double"},
    # Getting the pages (docs/fetching.md): pages fetched and rendered, blocks by kind,
    # challenges passed in the browser, sessions, and the refusal line of a job whose
    # every page was refused (core.fetch.refusal).
    "pages": _LONG,
    "pages_rendered": _LONG,
    "renders_per_1000_pages": {"type": "double"},
    "pages_refused": _LONG,
    "blocks_blocked": _LONG,
    "blocks_challenge": _LONG,
    "blocks_captcha": _LONG,
    "blocks_throttled": _LONG,
    "challenges_passed": _LONG,
    "sessions_created": _LONG,
    "sessions_retired": _LONG,
    "refusal": {"type": "keyword", "ignore_above": 2048},
    # How the job ended (core.jobs.outcome): its close reason and the one line saying why.
    "close_reason": dict(KEYWORD),
    "outcome": {"type": "keyword", "ignore_above": 2048},
    # The crawl budgets the job reached (core.frontier.budget.reached_text): "pages, chain (3
    # requests refused)"; None when none was.
    "budgets": {"type": "keyword", "ignore_above": 1024},
    "items_scraped": _LONG,
    "items_dropped": _LONG,
    "items_invalid": _LONG,
    "items_new": _LONG,
    "items_changed": _LONG,
    "items_unchanged": _LONG,
    "items_stored": _LONG,
    "items_incomplete": _LONG,
    "items_spilled": _LONG,
    "items_dead_letter": _LONG,
    "items_removed": _LONG,  # marked removed by the job (core.recrawl.removals)
    "items_restored": _LONG,  # removed items the job saw again
    "errors": _LONG,  # ERROR log lines
    # Pages a spider fetched but could not read (its ``<spider>/<page>_unparsed`` counts)
    "pages_unparsed": _LONG,
    # Pages that answered 4xx/5xx (``responses/error``; a missing robots.txt is not one)
    "error_responses": _LONG,
    "spill_remaining": _LONG,
    "alerts_failed": _LONG,  # alerts of the job Slack did not take (templates in extra)
    "counters": {"type": "flattened"},
    "extra": {"type": "flattened"},
}

When = dt.datetime | float | int | str | None


def _jobs_template(replicas: int) -> dict[str, Any]:
    """``put_index_template``'s arguments for the jobs template."""
    return {
        "name": JOBS_TEMPLATE,
        "index_patterns": ["platform-jobs-v*"],
        "priority": 200,
        "template": {
            "settings": {"number_of_shards": 1, "number_of_replicas": replicas},
            "mappings": {"dynamic": "strict", "properties": JOBS_PROPERTIES},
        },
        "meta": {"managed_by": "core.jobs.index"},
    }


_JOBS_CREATE: dict[str, Any] = {
    "index": JOBS_INDEX,
    "aliases": {JOBS_ALIAS: {"is_write_index": True}},
}


def _already_exists(exc: BadRequestError) -> bool:
    return exc.error == "resource_already_exists_exception"


def ensure_jobs_index(es: Elasticsearch, *, replicas: int | None = None) -> None:
    """The jobs template, index and alias; idempotent. ``replicas`` None: one when the
    cluster has two or more data nodes, else none (so the ledger survives a node's loss)."""
    es.indices.put_index_template(**_jobs_template(cluster_replicas_sync(es, replicas)))
    try:
        es.indices.create(**_JOBS_CREATE)
    except BadRequestError as exc:
        if not _already_exists(exc):
            raise
        es.indices.put_mapping(index=JOBS_INDEX, properties=JOBS_PROPERTIES)


async def ensure_jobs_index_async(es: AsyncElasticsearch, *, replicas: int | None = None) -> None:
    """``ensure_jobs_index`` on a crawl's own asynchronous client."""
    await es.indices.put_index_template(**_jobs_template(await cluster_replicas(es, replicas)))
    try:
        await es.indices.create(**_JOBS_CREATE)
    except BadRequestError as exc:
        if not _already_exists(exc):
            raise
        await es.indices.put_mapping(index=JOBS_INDEX, properties=JOBS_PROPERTIES)


def block_count(counters: Mapping[str, Any]) -> int:
    """Blocked responses: ``blocks/total`` if counted, else the sum of ``blocks/<kind>``.

    Only one level below ``blocks/`` is summed, so finer breakdowns
    (``blocks/<kind>/<rule>``) are not counted twice. No block counters: 0.
    """
    if "blocks/total" in counters:
        return int(counters["blocks/total"])
    return sum(
        value
        for name, value in counters.items()
        if name.startswith("blocks/")
        and name.count("/") == 1
        and isinstance(value, int)  # not gauges such as blocks/rate
        and not isinstance(value, bool)
    )


def _sum_prefix(counters: Mapping[str, int], prefix: str) -> int:
    return sum(int(v) for name, v in counters.items() if name.startswith(prefix))


def job_document(
    site: str,
    job_id: str,
    status: str,
    started_at: When,
    finished_at: When,
    counters: Mapping[str, Any],
    *,
    spill_remaining: int | None = None,
    extra: Mapping[str, Any] | None = None,
    presented: Presented | None = None,
    close_reason: str | None = None,
    outcome: str | None = None,
) -> dict[str, Any]:
    """The jobs-index document of a job (pure: no I/O). ``presented``: what the crawl
    showed the site, for the refusal line's advice. ``close_reason``/``outcome``: a
    crawl's own verdict; None: judged from ``counters`` (``core.jobs.outcome``)."""
    # Counters are integers; gauges such as ``blocks/rate`` (a float) are not summed.
    numbers = {
        name: int(value)
        for name, value in counters.items()
        if isinstance(value, int) and not isinstance(value, bool)
    }
    started, finished = _as_datetime(started_at), _as_datetime(finished_at)
    responses = numbers.get("downloader/response_count", 0)
    blocks = block_count(numbers)
    # The ledger's pages when the job had one (exact), else the crawl's classified count.
    pages = numbers.get("pages/total", numbers.get("responses/classified", 0))
    rendered = numbers.get("pages/rendered", numbers.get("render/ok", 0))
    document: dict[str, Any] = {
        "site": site,
        "job_id": job_id,
        "status": status,
        "started_at": _iso(started),
        "finished_at": _iso(finished),
        "duration_seconds": (finished - started).total_seconds() if started and finished else None,
        "requests": numbers.get("downloader/request_count", 0),
        "responses": responses,
        "blocks": blocks,
        # No responses: no rate (rather than a misleading 0).
        "block_rate": blocks / (pages or responses) if (pages or responses) else None,
        "pages": pages,
        "pages_rendered": rendered,
        "renders_per_1000_pages": round(1000 * rendered / pages, 2) if pages else None,
        "pages_refused": numbers.get("pages/refused", 0),
        **{f"blocks_{kind}": numbers.get(f"blocks/{kind}", 0) for kind in KINDS},
        "challenges_passed": numbers.get("sessions/challenges_passed", 0),
        "sessions_created": numbers.get("sessions/created", 0),
        "sessions_retired": numbers.get(
            "sessions/retired", _sum_prefix(numbers, "sessions/retired/")
        ),
        "refusal": refusal(numbers, presented),
        "budgets": reached_text(numbers) or None,
        # The ledger's exact figures (core.figures.ledger) when the job had one; else (one local
        # crawl, nothing lost to a kill) the crawl's own counters.
        "items_scraped": numbers.get("items/scraped", numbers.get("item_scraped_count", 0)),
        "items_dropped": numbers.get("item_dropped_count", 0),
        "items_invalid": numbers.get("items/invalid", _sum_prefix(numbers, "validation/dropped/")),
        "items_new": numbers.get("items/new", 0),
        "items_changed": numbers.get("items/changed", 0),
        "items_unchanged": numbers.get("items/unchanged", 0),
        "items_stored": numbers.get("items/stored", numbers.get("store/indexed", 0)),
        "items_incomplete": numbers.get("items/incomplete", 0),
        "items_spilled": numbers.get("store/spilled", 0),
        "items_dead_letter": numbers.get("store/dead_letter", 0),
        "items_removed": numbers.get("items/removed", 0),
        "items_restored": numbers.get("items/restored", 0),
        "errors": numbers.get("log_count/ERROR", 0),
        "pages_unparsed": sum(unparsed_pages(numbers).values()),
        "error_responses": numbers.get("responses/error", 0),
        "spill_remaining": spill_remaining,
        "counters": {name: str(value) for name, value in sorted(numbers.items())},
    }
    if close_reason is None or outcome is None:
        verdict = judge(
            numbers,
            reason=job_reason(numbers),
            spill_remaining=spill_remaining,
            refusal=document["refusal"],
        )
        close_reason, outcome = verdict.reason, verdict.line
    document["close_reason"], document["outcome"] = close_reason, outcome
    if extra:
        document["extra"] = dict(extra)
    return document


def write_job_document(
    es: Elasticsearch,
    site: str,
    job_id: str,
    status: str,
    started_at: When,
    finished_at: When,
    counters: Mapping[str, Any],
    *,
    spill_remaining: int | None = None,
    extra: Mapping[str, Any] | None = None,
    refresh: bool = False,
    presented: Presented | None = None,
) -> dict[str, Any]:
    """Write (or replace) the job's document in the ``jobs`` index; returns it (with its
    ``close_reason`` and ``outcome``, judged from ``counters``)."""
    ensure_jobs_index(es)
    document = job_document(
        site,
        job_id,
        status,
        started_at,
        finished_at,
        counters,
        spill_remaining=spill_remaining,
        extra=extra,
        presented=presented,
    )
    es.index(**_index_request(document, refresh))
    return document


async def write_job_document_async(
    es: AsyncElasticsearch,
    site: str,
    job_id: str,
    status: str,
    started_at: When,
    finished_at: When,
    counters: Mapping[str, Any],
    *,
    spill_remaining: int | None = None,
    extra: Mapping[str, Any] | None = None,
    close_reason: str | None = None,
    outcome: str | None = None,
) -> dict[str, Any]:
    """``write_job_document`` on a crawl's own asynchronous client (a local crawl's close,
    with its verdict: ``close_reason``, ``outcome``)."""
    await ensure_jobs_index_async(es)
    document = job_document(
        site,
        job_id,
        status,
        started_at,
        finished_at,
        counters,
        spill_remaining=spill_remaining,
        extra=extra,
        close_reason=close_reason,
        outcome=outcome,
    )
    await es.index(**_index_request(document, refresh=False))
    return document


def _index_request(document: Mapping[str, Any], refresh: bool) -> dict[str, Any]:
    return {
        "index": JOBS_ALIAS,
        "id": f"{document['site']}:{document['job_id']}",
        "document": document,
        "require_alias": True,
        "refresh": "wait_for" if refresh else None,
    }


def add_failed_alert(es: Elasticsearch, site: str, job_id: str, template: str) -> None:
    """Count an alert of the job that was not delivered in its (written) document:
    ``alerts_failed`` + 1, the template appended to ``extra.alerts_failed``.

    Read, then written only if unchanged since (no scripts: the platform's node has no
    Painless); a concurrent change is read again.
    """
    doc_id = f"{site}:{job_id}"
    for attempt in range(3):
        current = es.get(index=JOBS_ALIAS, id=doc_id)
        source = current["_source"]
        extra = dict(source.get("extra") or {})
        extra["alerts_failed"] = [*extra.get("alerts_failed", []), template]
        try:
            es.update(
                index=JOBS_ALIAS,
                id=doc_id,
                doc={"alerts_failed": int(source.get("alerts_failed") or 0) + 1, "extra": extra},
                if_seq_no=current["_seq_no"],
                if_primary_term=current["_primary_term"],
            )
            return
        except ConflictError:
            if attempt == 2:
                raise


def job_counters(server: Client, site: str, job_id: str) -> dict[str, int]:
    """The job's counters summed over workers, with the exact figures of its ledger
    (``core.figures.ledger.FIGURES``) in place of the workers' counts of the same things, and
    the items it marked removed or restored (``core.recrawl.removals``)."""
    return {
        **JobStats(server, site).get(job_id),
        **job_figures(server, site, job_id),
        **removal_figures(server, site, job_id),
    }


def job_started_at(server: Client, site: str, job_id: str) -> dt.datetime | None:
    """When the producer enqueued the job (its score in ``<site>:jobs``)."""
    score = server.zscore(SiteKeys(site).jobs, job_id)
    return None if score is None else dt.datetime.fromtimestamp(score, tz=dt.UTC)


def _as_datetime(value: When) -> dt.datetime | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    if isinstance(value, int | float):
        return dt.datetime.fromtimestamp(value, tz=dt.UTC)
    parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="milliseconds")
