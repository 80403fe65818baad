"""A job's crawl budget held across workers: pages per job and wall time, in Redis.

Every worker counts the pages it got into one counter of the job; the first call that
takes it past the budget (or finds the job older than its wall-time budget) records the
reason and empties the site's frontier, so the job ends the way any job ends: nothing
queued, in-flight leases acked, workers idle, and the flow's drain poll sees it drained.
A request yielded after that is refused by the worker (``crawlers.limits.budget``).

Framework-agnostic: no Scrapy here.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.figures.stats import STATS_TTL_SECONDS
from core.frontier.layout import clear_async
from core.keys import SiteKeys
from core.lua import load_script
from core.redis_client import AsyncClient

# Budget names: the finish reason of a crawl closed by one is ``budget_<name>``.
PAGES = "pages"
TIME = "time"

# Lua, each script headed by its KEYS and ARGV: core/frontier/lua/budget_*.lua
_COUNT = load_script("core.frontier", "budget_count")
_CLOCK = load_script("core.frontier", "budget_clock")


class JobBudget:
    """The page and wall-time budgets of one site's jobs (asyncio client)."""

    def __init__(self, server: AsyncClient, site: str, *, ttl: int = STATS_TTL_SECONDS) -> None:
        self.server = server
        self.site = site
        self.keys = SiteKeys(site)
        self.ttl = ttl

    async def count_pages(self, job_id: str, n: int, limit: int) -> tuple[int, bool, str]:
        """Add ``n`` pages to the job: (pages so far, whether this call ended the job,
        the reason the job's budget ended it, '' while it runs)."""
        keys = [self.keys.job_budget_pages(job_id), self.keys.job_budget(job_id)]
        pages, first, reason = await self.server.eval(_COUNT, 2, *keys, n, limit, self.ttl)
        if limit > 0 and int(pages) >= limit:
            # Emptied on every call past the budget: a push racing the first is dropped too.
            await clear_async(self.server, self.site)
        return int(pages), bool(int(first)), _text(reason)

    async def check_clock(self, job_id: str, limit: float) -> tuple[float, bool, str]:
        """(seconds since the job was enqueued on Redis' clock, whether this call ended
        the job, the reason its budget ended it or '')."""
        keys = [self.keys.job_budget(job_id), self.keys.jobs]
        elapsed, first, reason = await self.server.eval(_CLOCK, 2, *keys, job_id, limit, self.ttl)
        if limit > 0 and float(_text(elapsed)) >= limit:
            await clear_async(self.server, self.site)
        return float(_text(elapsed)), bool(int(first)), _text(reason)


def reached_text(counters: Sequence[tuple[str, int]] | dict[str, int]) -> str:
    """``pages (budget 100), chain 12 links refused``: the budgets a job reached, from its
    counters (``budget/reached/<name>`` and ``budget/refused/<name>``); '' for none."""
    items = dict(counters)
    names = sorted(
        {
            name.split("/", 2)[2]
            for name in items
            if name.startswith(("budget/reached/", "budget/refused/")) and name.count("/") == 2
        }
    )
    parts = []
    for name in names:
        refused = int(items.get(f"budget/refused/{name}", 0))
        parts.append(f"{name} ({refused} requests refused)" if refused else name)
    return ", ".join(parts)


def _text(value: bytes | str | int) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
