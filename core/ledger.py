"""A job's ledger: the idempotent records its report's figures are counted from.

Scrapy's stats are per-process counters; a worker pushes their deltas to the job's stats
hash every few seconds (``core.jobstats``), and a worker killed with SIGKILL takes its
last interval with it. Counters are fine for diagnostics; the figures a report shows must
be exact after any number of kills. So each fact is recorded once per item or per
response, under a name that a re-delivery writes again rather than adds to, and written
*before* the work it describes is acknowledged (the request's lease is acked after its
items left the pipelines): a worker killed before the write has its request crawled
again, which writes the record then.

======================  ====================================  =========================
figure                  record                                written by
======================  ====================================  =========================
``items/scraped``       ``job_verdicts`` (key -> verdict)     dedup (``core.dedup``)
``items/new|changed|    counts kept with the verdicts         dedup, same Lua call
unchanged``
``items/incomplete``    ``job_incomplete`` (key -> parts)     dedup, same Lua call
``items/stored``        ``job_stored`` (set of keys)          the store's writer, once
                                                              Elasticsearch accepted it
                                                              (a seen item's touch too)
``items/invalid``       ``job_invalid`` (ref -> reason)       validation; an item valid
                                                              later in the job leaves it
``blocks/total``        ``job_blocked`` (fp:attempt -> kind)  the fetch retry layer
======================  ====================================  =========================

Framework-agnostic: no Scrapy here (``crawlers.ledger`` is the crawl's glue).
"""

from __future__ import annotations

from collections.abc import Iterable

import redis
import redis.asyncio

from core.jobstats import STATS_TTL_SECONDS
from core.keys import SiteKeys

# The exact figures, by the counter names the jobs document reads (core.jobs_index).
FIGURES = (
    "items/scraped",
    "items/new",
    "items/changed",
    "items/unchanged",
    "items/stored",
    "items/invalid",
    "items/incomplete",
    "blocks/total",
)


# KEYS: any key of the site (routes the call to the master holding the site's slot)
_TIME = "return redis.call('TIME')"


class JobLedger:
    """Writes a site's ledger records (asyncio client: it runs inside Scrapy's loop).

    Redis errors propagate: the caller is the one retry layer of its hop (an unrecorded
    fact must not be acknowledged).
    """

    def __init__(
        self, server: redis.asyncio.Redis, site: str, *, ttl: int = STATS_TTL_SECONDS
    ) -> None:
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

    async def blocked(self, job_id: str, response_ref: str, kind: str) -> None:
        """Record a blocked response (``response_ref``: request fingerprint and attempt)."""
        async with self.server.pipeline(transaction=False) as pipe:
            pipe.hset(self.keys.job_blocked(job_id), response_ref, kind)
            pipe.expire(self.keys.job_blocked(job_id), self.ttl)
            await pipe.execute()

    async def redis_time(self) -> float:
        """Epoch seconds by the clock of the Redis holding the site's keys: the one every
        timestamp of the site is taken from (on a cluster, the site's master)."""
        seconds, micros = await self.server.eval(_TIME, 1, self.keys.queue)
        return float(seconds) + float(micros) / 1e6


def job_figures(server: redis.Redis, site: str, job_id: str) -> dict[str, int]:
    """The job's exact figures (``FIGURES``), counted from its ledger."""
    keys = SiteKeys(site)
    with server.pipeline(transaction=True) as pipe:
        pipe.hlen(keys.job_verdicts(job_id))
        pipe.hmget(keys.stats(job_id), ["items/new", "items/changed", "items/unchanged"])
        pipe.scard(keys.job_stored(job_id))
        pipe.hlen(keys.job_invalid(job_id))
        pipe.hlen(keys.job_incomplete(job_id))
        pipe.hlen(keys.job_blocked(job_id))
        scraped, verdicts, stored, invalid, incomplete, blocked = pipe.execute()
    new, changed, unchanged = (int(value or 0) for value in verdicts)
    return {
        "items/scraped": int(scraped),
        "items/new": new,
        "items/changed": changed,
        "items/unchanged": unchanged,
        "items/stored": int(stored),
        "items/invalid": int(invalid),
        "items/incomplete": int(incomplete),
        "blocks/total": int(blocked),
    }


def incomplete_items(server: redis.Redis, site: str, job_id: str) -> dict[str, list[str]]:
    """Item key -> the parts it was stored without, for the job."""
    raw = server.hgetall(SiteKeys(site).job_incomplete(job_id))
    return {_text(key): _text(parts).split(",") for key, parts in raw.items()}


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
