"""Worker registry: each crawl worker's heartbeat in Redis, with what it is doing.

Liveness is decided by Redis' clock only: a heartbeat sets the worker's key with a TTL
and its deadline (Redis ``TIME`` + the TTL) in the site's deadlines set, in one script,
so a worker whose clock is wrong is judged exactly like one whose clock is right.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import asdict, dataclass, field

from core.keys import SiteKeys
from core.lua import load_script
from core.redis_client import Client, text


@dataclass
class WorkerInfo:
    """What a worker reports in each heartbeat.

    The wall-clock fields (``started_at``, ``last_activity``, ``heartbeat_at``) are the
    worker's own clock and informational only (shown to operators): nothing decides on
    them. Whether a worker is alive is the heartbeat key's TTL and the worker's deadline,
    both on Redis' clock.
    """

    worker_id: str
    site: str
    job_id: str | None = None
    pid: int = field(default_factory=os.getpid)
    host: str = field(default_factory=socket.gethostname)
    in_flight: int = 0
    idle: bool = False
    always_on: bool = False
    started_at: float = field(default_factory=time.time)
    last_activity: float = field(default_factory=time.time)
    heartbeat_at: float = field(default_factory=time.time)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, raw: bytes | str) -> WorkerInfo:
        return cls(**json.loads(raw))


# Lua, each script headed by its KEYS and ARGV: core/frontier/lua/{heartbeat,unregister}.lua
_HEARTBEAT = load_script("core.frontier", "heartbeat")
_UNREGISTER = load_script("core.frontier", "unregister")


class WorkerRegistry:
    """Heartbeats live at ``{<site>}:worker:<id>`` with a TTL, and each worker's deadline
    (Redis' clock) in ``{<site>}:worker_deadlines``; a worker whose key expired is dead."""

    def __init__(self, server: Client, site: str, *, ttl: float = 15.0) -> None:
        self.server = server
        self.keys = SiteKeys(site)
        self.ttl = ttl
        self._heartbeat = server.register_script(_HEARTBEAT)
        self._unregister = server.register_script(_UNREGISTER)

    def _keys(self, worker_id: str) -> list[str]:
        return [self.keys.worker_prefix + worker_id, self.keys.workers, self.keys.worker_deadlines]

    def heartbeat(self, info: WorkerInfo) -> int:
        """Write the heartbeat and push the worker's deadline to Redis' now + TTL; returns
        that now (epoch ms, Redis' clock)."""
        info.heartbeat_at = time.time()
        ttl_ms = max(1, int(self.ttl * 1000))
        return int(
            self._heartbeat(
                keys=self._keys(info.worker_id), args=[info.worker_id, info.to_json(), ttl_ms]
            )
        )

    def unregister(self, worker_id: str) -> None:
        """Remove the worker; leases it still holds become due for reclaim at once."""
        self._unregister(keys=self._keys(worker_id), args=[worker_id])

    def live(self) -> list[WorkerInfo]:
        """Workers whose heartbeat key has not expired (its TTL runs on Redis' clock);
        expired ones are pruned from the set."""
        ids = sorted(text(member) for member in self.server.smembers(self.keys.workers))
        if not ids:
            return []
        raws = self.server.mget([self.keys.worker_prefix + worker_id for worker_id in ids])
        dead = [worker_id for worker_id, raw in zip(ids, raws, strict=True) if raw is None]
        if dead:
            self.server.srem(self.keys.workers, *dead)
        return [WorkerInfo.from_json(raw) for raw in raws if raw is not None]


@dataclass(frozen=True)
class ConsumerCheck:
    """Answer to the preflight question "does every queue of this site have live consumers?"."""

    site: str
    queues: tuple[str, ...]
    workers: tuple[WorkerInfo, ...]

    @property
    def ok(self) -> bool:
        return bool(self.workers)

    def message(self) -> str:
        if self.ok:
            ids = ", ".join(f"{w.worker_id} (pid {w.pid} on {w.host})" for w in self.workers)
            return f"{self.site}: {len(self.workers)} live consumer(s): {ids}"
        return (
            f"{self.site}: no live consumers for {', '.join(self.queues)}: no worker has sent "
            f"a heartbeat in the last TTL; start `scrapy crawl {self.site}` workers"
        )


def check_consumers(server: Client, site: str) -> ConsumerCheck:
    """Live workers of ``site``. One pool of workers serves both of the site's queues
    (the start list and the request queue), so any live worker consumes each of them."""
    part = SiteKeys(site).partition(0, 1)
    return ConsumerCheck(
        site=site,
        queues=(part.start_urls, part.queue_prefix + "*"),
        workers=tuple(WorkerRegistry(server, site).live()),
    )
