"""Per-job counters in Redis: one hash per (site, job), updated with HINCRBY deltas.

Workers keep Scrapy's in-memory stats and push only what changed since their last
push, in one MULTI pipeline: atomic, and a few round trips per interval rather than one
per event (scrapy-redis' RedisStatsCollector writes on every increment).
"""

from __future__ import annotations

from collections.abc import Mapping

from core.keys import SiteKeys
from core.redis_client import Client, text

# Spiders count a page they fetched but could not read as ``<spider>/<page>_unparsed``.
UNPARSED_SUFFIX = "_unparsed"

# Job counters expire a while after the last write; the jobs index keeps the history.
STATS_TTL_SECONDS = 14 * 24 * 3600


class JobStats:
    def __init__(self, server: Client, site: str) -> None:
        self.server = server
        self.keys = SiteKeys(site)

    def add(self, job_id: str, deltas: Mapping[str, int]) -> None:
        changed = {name: int(value) for name, value in deltas.items() if int(value) != 0}
        if not changed:
            return
        key = self.keys.stats(job_id)
        with self.server.pipeline(transaction=True) as pipe:
            for name, value in changed.items():
                pipe.hincrby(key, name, value)
            pipe.expire(key, STATS_TTL_SECONDS)
            pipe.execute()

    def get(self, job_id: str) -> dict[str, int]:
        raw = self.server.hgetall(self.keys.stats(job_id))
        return {text(name): int(value) for name, value in raw.items()}

    def value(self, job_id: str, name: str) -> int:
        """One counter of the job (0 when not counted)."""
        return int(self.server.hget(self.keys.stats(job_id), name) or 0)


def unparsed_pages(counters: Mapping[str, object]) -> dict[str, int]:
    """The job's unreadable pages by counter (``demo/product_unparsed``: 111)."""
    return {
        name: int(value)  # type: ignore[call-overload]  # counters: numbers, or their text
        for name, value in counters.items()
        if name.endswith(UNPARSED_SUFFIX) and value
    }


class DeltaTracker:
    """Turns a growing snapshot of integer counters into deltas since the last call."""

    def __init__(self) -> None:
        self._last: dict[str, int] = {}

    def deltas(self, snapshot: Mapping[str, object]) -> dict[str, int]:
        out: dict[str, int] = {}
        for name, value in snapshot.items():
            # Only counters: floats (e.g. memory, elapsed) and datetimes are not summable.
            if isinstance(value, bool) or not isinstance(value, int):
                continue
            delta = value - self._last.get(name, 0)
            if delta:
                out[name] = delta
        return out

    def commit(self, snapshot: Mapping[str, object]) -> None:
        """Record ``snapshot`` as pushed (call only after the push succeeded)."""
        self._last.update(
            {
                name: value
                for name, value in snapshot.items()
                if isinstance(value, int) and not isinstance(value, bool)
            }
        )
