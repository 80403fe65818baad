"""A job's ledger: the idempotent records its report's figures are counted from.

Scrapy's stats are per-process counters a killed worker loses its last interval of; the
figures a report shows must be exact after any number of kills. So each fact is recorded
once per item or response, under a name a re-delivery writes again rather than adds to,
before the work it describes is acknowledged. This module reads the records back into
the report's figures (items, pages, blocks, sessions, dropped requests).

Reads: the job's ledger keys (``core.keys.SiteKeys``: ``job_verdicts``, ``job_stored``,
``job_invalid``, ``job_responses``, ``job_sessions``, ``job_dropped``, ...). The figure ->
record -> writer table: docs/pipelines.md "Exact figures: the job's ledger". No Scrapy here
(``crawlers.runtime.ledger`` is the crawl's glue).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from redis.typing import EncodableT, FieldT

from core.figures.stats import STATS_TTL_SECONDS
from core.keys import SiteKeys
from core.lua import load_script
from core.redis_client import AsyncClient, Client

# The exact figures, by the counter names the jobs document reads (core.jobs.index).
FIGURES = (
    "items/scraped",
    "items/new",
    "items/changed",
    "items/unchanged",
    "items/stored",
    "items/invalid",
    "items/incomplete",
    "blocks/total",
    "pages/total",
    "pages/rendered",
    "pages/requests",
    "pages/refused",
    "sessions/created",
    "sessions/retired",
    "sessions/challenges_passed",
    "requests/failed",
)
# Block kinds the fetch layer records (core.fetch.blocks.BLOCK_KINDS), each its own figure.
BLOCK_FIGURES = ("blocked", "challenge", "captcha", "throttled")
RENDERED = ":r"
# The record of a robots.txt fetch: its blocks count, it is no page of the job.
ROBOTS_SUFFIX = ":robots"


# Lua, each script headed by its KEYS and ARGV: core/figures/lua/redis_time.lua
_TIME = load_script("core.figures", "redis_time")


class JobLedger:
    """Writes a site's ledger records (asyncio client: it runs inside Scrapy's loop).

    Redis errors propagate: the caller is the one retry layer of its hop (an unrecorded
    fact must not be acknowledged).
    """

    def __init__(self, server: AsyncClient, site: str, *, ttl: int = STATS_TTL_SECONDS) -> None:
        self.server = server
        self.keys = SiteKeys(site)
        self.ttl = ttl

    async def stored(self, entries: Iterable[tuple[str, str]]) -> None:
        """Record ``(job id, item key)`` pairs as accepted by Elasticsearch."""
        by_job: dict[str, set[str]] = {}
        for job_id, key in entries:
            by_job.setdefault(job_id, set()).add(key)
        if not by_job:
            return
        async with self.server.pipeline(transaction=False) as pipe:
            for job_id, keys in by_job.items():
                pipe.sadd(self.keys.job_stored(job_id), *sorted(keys))
                pipe.expire(self.keys.job_stored(job_id), self.ttl)
            await pipe.execute()

    async def invalid(self, job_id: str, ref: str, reason: str) -> None:
        """Record an item validation dropped (``ref``: its key, else its URL)."""
        async with self.server.pipeline(transaction=False) as pipe:
            pipe.hset(self.keys.job_invalid(job_id), ref, reason[:500])
            pipe.expire(self.keys.job_invalid(job_id), self.ttl)
            await pipe.execute()

    async def responses(self, job_id: str, records: Iterable[tuple[str, str]]) -> None:
        """Record classified responses: ``(ref, value)`` with ``ref`` the request
        fingerprint and attempt and ``value`` its verdict kind (``RENDERED`` appended when
        a browser rendered it)."""
        mapping: dict[FieldT, EncodableT] = dict(records)
        if not mapping:
            return
        key = self.keys.job_responses(job_id)
        async with self.server.pipeline(transaction=False) as pipe:
            pipe.hset(key, mapping=mapping)
            pipe.expire(key, self.ttl)
            await pipe.execute()

    async def session_events(self, job_id: str, events: Iterable[tuple[str, str]]) -> None:
        """Record what became of sessions (``created:<id>``, ``passed:<id>:<gen>``,
        ``retired:<id>`` -> reason); a re-delivered event writes the same field again."""
        mapping: dict[FieldT, EncodableT] = dict(events)
        if not mapping:
            return
        key = self.keys.job_sessions(job_id)
        async with self.server.pipeline(transaction=False) as pipe:
            pipe.hset(key, mapping=mapping)
            pipe.expire(key, self.ttl)
            await pipe.execute()

    async def redis_time(self) -> float:
        """Epoch seconds by the clock of the Redis holding the site's keys: the one every
        timestamp of the site is taken from (on a cluster, the site's master)."""
        seconds, micros = await self.server.eval(_TIME, 1, self.keys.jobs)
        return float(seconds) + float(micros) / 1e6


def job_figures(server: Client, site: str, job_id: str) -> dict[str, int]:
    """The job's exact figures (``FIGURES`` and ``blocks/<kind>``), counted from its ledger."""
    keys = SiteKeys(site)
    with server.pipeline(transaction=True) as pipe:
        pipe.hlen(keys.job_verdicts(job_id))
        pipe.hmget(keys.stats(job_id), ["items/new", "items/changed", "items/unchanged"])
        pipe.scard(keys.job_stored(job_id))
        pipe.hlen(keys.job_invalid(job_id))
        pipe.hlen(keys.job_incomplete(job_id))
        pipe.hgetall(keys.job_responses(job_id))
        pipe.hgetall(keys.job_sessions(job_id))
        pipe.hvals(keys.job_dropped(job_id))
        scraped, verdicts, stored, invalid, incomplete, responses, sessions, dropped = (
            pipe.execute()
        )
    new, changed, unchanged = (int(value or 0) for value in verdicts)
    return {
        "items/scraped": int(scraped),
        "items/new": new,
        "items/changed": changed,
        "items/unchanged": unchanged,
        "items/stored": int(stored),
        "items/invalid": int(invalid),
        "items/incomplete": int(incomplete),
        **response_figures({_text(k): _text(v) for k, v in responses.items()}),
        **session_figures(_text(k) for k in sessions),
        **{f"sessions/retired/{why}": n for why, n in _retired_reasons(sessions).items()},
        **dropped_figures(_text(reason) for reason in dropped),
    }


# Drops that lose no page (crawlers.frontier.fates.POLICY): robots.txt, a duplicate.
POLICY_DROPS = frozenset({"robots", "duplicate"})


def dropped_figures(reasons: Iterable[str]) -> dict[str, int]:
    """``requests/dropped/<reason>`` per reason and ``requests/failed`` (the drops that
    lost a page), from the ``job_dropped`` records' reasons."""
    counts: Counter[str] = Counter(reasons)
    return {
        "requests/failed": sum(n for why, n in counts.items() if why not in POLICY_DROPS),
        **{f"requests/dropped/{why}": n for why, n in sorted(counts.items())},
    }


def stored_count(server: Client, site: str, job_id: str) -> int:
    """Items of the job Elasticsearch accepted so far (``items/stored``), by any worker."""
    return int(server.scard(SiteKeys(site).job_stored(job_id)))


def response_figures(responses: dict[str, str]) -> dict[str, int]:
    """Pages, renders, blocks by kind and pages refused, from ``job_responses`` records."""
    kinds: Counter[str] = Counter()
    rendered = 0
    outcome: dict[str, bool] = {}  # request fingerprint -> got a non-block answer
    pages = 0
    for ref, value in responses.items():
        kind = value.removesuffix(RENDERED)
        kinds[kind] += 1
        if ref.endswith(ROBOTS_SUFFIX):
            continue
        pages += 1
        rendered += value.endswith(RENDERED)
        fingerprint = ref.split(":", 1)[0]
        outcome[fingerprint] = outcome.get(fingerprint, False) or kind not in BLOCK_FIGURES
    figures = {f"blocks/{kind}": kinds[kind] for kind in BLOCK_FIGURES}
    figures["blocks/total"] = sum(figures.values())
    figures["pages/total"] = pages
    figures["pages/rendered"] = rendered
    figures["pages/requests"] = len(outcome)
    figures["pages/refused"] = sum(1 for got in outcome.values() if not got)
    return figures


def session_figures(events: Iterable[str]) -> dict[str, int]:
    counts: Counter[str] = Counter(event.split(":", 1)[0] for event in events)
    return {
        "sessions/created": counts["created"],
        "sessions/retired": counts["retired"],
        "sessions/challenges_passed": counts["passed"],
    }


def _retired_reasons(sessions: dict[bytes | str, bytes | str]) -> Counter[str]:
    return Counter(_text(v) for k, v in sessions.items() if _text(k).startswith("retired:"))


def incomplete_items(server: Client, site: str, job_id: str) -> dict[str, list[str]]:
    """Item key -> the parts it was stored without, for the job."""
    raw = server.hgetall(SiteKeys(site).job_incomplete(job_id))
    return {_text(key): _text(parts).split(",") for key, parts in raw.items()}


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
