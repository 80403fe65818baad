"""Worker registry: each crawl worker's heartbeat in Redis, with what it is doing."""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import asdict, dataclass, field

import redis

from core.keys import SiteKeys


@dataclass
class WorkerInfo:
    """What a worker reports in each heartbeat."""

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


class WorkerRegistry:
    """Heartbeats live at ``<site>:worker:<id>`` with a TTL; a worker whose key expired is dead."""

    def __init__(self, server: redis.Redis, site: str, *, ttl: float = 15.0) -> None:
        self.server = server
        self.keys = SiteKeys(site)
        self.ttl = ttl

    def heartbeat(self, info: WorkerInfo) -> None:
        info.heartbeat_at = time.time()
        with self.server.pipeline(transaction=True) as pipe:
            pipe.set(
                self.keys.worker_prefix + info.worker_id, info.to_json(), px=int(self.ttl * 1000)
            )
            pipe.sadd(self.keys.workers, info.worker_id)
            pipe.execute()

    def unregister(self, worker_id: str) -> None:
        with self.server.pipeline(transaction=True) as pipe:
            pipe.delete(self.keys.worker_prefix + worker_id)
            pipe.srem(self.keys.workers, worker_id)
            pipe.execute()

    def live(self) -> list[WorkerInfo]:
        """Workers whose heartbeat has not expired; expired ones are pruned from the set."""
        ids = sorted(member.decode() for member in self.server.smembers(self.keys.workers))
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


def check_consumers(server: redis.Redis, site: str) -> ConsumerCheck:
    """Live workers of ``site``. One pool of workers serves both of the site's queues
    (the start list and the request queue), so any live worker consumes each of them."""
    keys = SiteKeys(site)
    return ConsumerCheck(
        site=site,
        queues=(keys.start_urls, keys.queue),
        workers=tuple(WorkerRegistry(server, site).live()),
    )
