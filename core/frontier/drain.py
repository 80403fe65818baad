"""Drain state of a site's frontier for one job: may the downstream steps run yet?

Drained means: nothing queued, nothing leased (in flight), every live worker idle, and
the job's counters unchanged for at least ``stable_for`` seconds (the store's flush
window). Counters alone are never enough: a quiet crawl with a full queue is not done.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field

from core.figures.stats import JobStats
from core.frontier.queue import RedisFrontier
from core.frontier.workers import WorkerInfo, WorkerRegistry
from core.keys import SiteKeys
from core.lua import load_script
from core.redis_client import Client

# Lua, each script headed by its KEYS and ARGV: core/frontier/lua/drain_probe.lua
_PROBE = load_script("core.frontier", "drain_probe")
PROBE_TTL = 24 * 3600


@dataclass
class DrainState:
    site: str
    job_id: str
    queued: int
    leased: int
    workers: list[WorkerInfo]
    counters: dict[str, int]
    counters_stable_for: float
    stable_window: float
    reclaimed: int = 0
    checked_at: float = field(default_factory=time.time)

    @property
    def busy_workers(self) -> list[str]:
        return [worker.worker_id for worker in self.workers if not worker.idle]

    @property
    def drained(self) -> bool:
        return (
            self.queued == 0
            and self.leased == 0
            and not self.busy_workers
            and self.counters_stable_for >= self.stable_window
        )

    def describe(self) -> str:
        """One line for logs and flow run messages."""
        return (
            f"{self.site}/{self.job_id}: queued={self.queued} leased={self.leased} "
            f"workers={len(self.workers)} busy={len(self.busy_workers)} "
            f"counters stable {self.counters_stable_for:.1f}s/{self.stable_window:.1f}s "
            f"items={self.counters.get('item_scraped_count', 0)} -> "
            f"{'DRAINED' if self.drained else 'not drained'}"
        )


def drain_state(
    server: Client, site: str, job_id: str, *, stable_window: float = 0.0
) -> DrainState:
    """Report the frontier's drain state for ``site``/``job_id``.

    Every partition of the site's frontier counts (their number is read from Redis, as
    the producer recorded it). Leases of dead workers are reclaimed first (always safe,
    and without it a crashed worker's leases would hold the job open forever), in
    bounded batches: a poll never
    reads all leases. Counter stability is tracked in Redis on Redis' clock, so any
    number of pollers, in any process, agree on it.
    """
    frontier = RedisFrontier(server, site)
    reclaimed = frontier.reclaim()
    workers = WorkerRegistry(server, site).live()
    counters = JobStats(server, site).get(job_id)
    queued = frontier.queued()
    leased = frontier.leased()

    # Anything queued or leased counts as activity too, not only the counters.
    digest = hashlib.sha256(
        json.dumps([sorted(counters.items()), queued, leased]).encode()
    ).hexdigest()
    probe_key = SiteKeys(site).drain_probe(job_id)
    stable_ms = server.register_script(_PROBE)(keys=[probe_key], args=[digest, PROBE_TTL])
    stable_for = int(stable_ms) / 1000

    return DrainState(
        site=site,
        job_id=job_id,
        queued=queued,
        leased=leased,
        workers=workers,
        counters=counters,
        counters_stable_for=stable_for,
        stable_window=stable_window,
        reclaimed=reclaimed,
    )
