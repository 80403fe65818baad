"""A crash-safe request frontier in Redis: priority queue + leases, atomic in Lua.

Framework-agnostic: it stores opaque encoded requests. ``crawlers.frontier.scheduler`` plugs it
into scrapy-redis' scheduler. Semantics:

* ``push``: add an encoded request; higher priority pops first, FIFO within a priority.
* ``lease``: atomically move up to ``n`` entries from the queue into the lease table,
  owned by a worker. A leased entry is in Redis until it is acked: a worker killed
  mid-request loses nothing.
* ``ack``: the worker finished with the entry (processed, or failed for good).
* ``push_and_ack``: a retry/redirect of a leased request replaces its lease in one step.
* ``reclaim``: leases of workers past their deadline (Redis' clock: the last heartbeat
  plus its TTL, see ``core.workers``) go back to the queue with their original score
  (start entries back to the start list), in bounded batches found through a sorted set
  of worker deadlines and each worker's set of lease ids: its cost does not grow with
  the leases live workers hold.

Start entries (the producer's JSON start requests) live in a list and are leased the
same way, so a worker killed between popping a start URL and scheduling its request
loses nothing either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import redis

from core import frontier_scripts as scripts
from core.jobstats import STATS_TTL_SECONDS
from core.keys import SiteKeys

# Entries of the start list are leased with this marker instead of a score.
START_MARKER = "start"

# Reclaim works in bounded steps: one script call re-queues at most RECLAIM_BATCH leases
# and looks at most at RECLAIM_WORKERS dead workers; ``reclaim()`` makes at most
# RECLAIM_ROUNDS calls, and the next heartbeat (or drain poll) continues the rest.
RECLAIM_BATCH = 500
RECLAIM_WORKERS = 32
RECLAIM_ROUNDS = 4


@dataclass(frozen=True)
class Lease:
    lease_id: str
    data: bytes
    is_start: bool = False


@dataclass(frozen=True)
class Push:
    """One entry of ``RedisFrontier.push_many``: the arguments of ``push``."""

    data: bytes
    priority: int = 0
    replaces_lease: str | None = None
    seen_key: str | None = None
    fingerprint: str | None = None


class RedisFrontier:
    """One site's queue, start list and lease table."""

    def __init__(self, server: redis.Redis, site: str) -> None:
        self.server = server
        self.keys = SiteKeys(site)
        self._lease = server.register_script(scripts.LEASE)
        self._lease_start = server.register_script(scripts.LEASE_START)
        self._ack = server.register_script(scripts.ACK)
        self._push_and_ack = server.register_script(scripts.PUSH_AND_ACK)
        self._push_many = server.register_script(scripts.PUSH_MANY)
        self._reclaim = server.register_script(scripts.RECLAIM)
        self._release = server.register_script(scripts.RELEASE)
        self._start_job = server.register_script(scripts.START_JOB)

    # -- queue ---------------------------------------------------------------------
    def push(
        self,
        data: bytes,
        priority: int = 0,
        *,
        replaces_lease: str | None = None,
        seen_key: str | None = None,
        fingerprint: str | None = None,
        seen_ttl: int = 7 * 24 * 3600,
    ) -> bool:
        """Queue ``data`` unless ``fingerprint`` is already in ``seen_key``.

        If it continues a leased request (a retry or redirect), that lease is released in
        the same step, whether or not the entry was queued. Returns True when queued.
        """
        k = self.keys
        if (seen_key is None) != (fingerprint is None):
            raise ValueError("seen_key and fingerprint go together")
        queued = self._push_and_ack(
            keys=[
                k.queue,
                k.leases,
                k.lease_scores,
                k.lease_owners,
                k.push_seq,
                seen_key or k.queue,
            ],
            args=[
                int(priority),
                data,
                replaces_lease or "",
                fingerprint or "",
                seen_ttl,
                k.worker_leases_prefix,
            ],
        )
        return bool(queued)

    def push_many(self, entries: Sequence[Push], *, seen_ttl: int = 7 * 24 * 3600) -> list[bool]:
        """``push`` for each entry, in order, in one round trip; True for each queued."""
        if not entries:
            return []
        k = self.keys
        keys = [k.queue, k.leases, k.lease_scores, k.lease_owners, k.push_seq]
        args: list[bytes | str | int] = [seen_ttl, k.worker_leases_prefix]
        for entry in entries:
            if (entry.seen_key is None) != (entry.fingerprint is None):
                raise ValueError("seen_key and fingerprint go together")
            keys.append(entry.seen_key or k.queue)
            args += [
                int(entry.priority),
                entry.data,
                entry.replaces_lease or "",
                entry.fingerprint or "",
            ]
        return [bool(queued) for queued in self._push_many(keys=keys, args=args)]

    def start_job(self, job_id: str, *, layout: str | None = None) -> None:
        """Make ``job_id`` the site's current job, started now by Redis' clock.

        ``layout``: the id of the site's accepted fingerprint baseline (``core.layouts``)
        the job's re-crawl records belong to; None leaves the job's workers to their own.
        """
        self._start_job(keys=[self.keys.current_job, self.keys.jobs], args=[job_id])
        if layout is not None:
            self.server.set(self.keys.job_layout(job_id), layout, ex=STATS_TTL_SECONDS)

    def record_drops(self, drops: Sequence[tuple[str, str, str]]) -> None:
        """Record ``(job id, request fingerprint, reason)`` of leased requests some
        component dropped (``crawlers.frontier.fates``), in the job's ledger
        (``core.ledger.dropped_figures`` counts them). Idempotent per request."""
        by_job: dict[str, dict[str, str]] = {}
        for job_id, fingerprint, reason in drops:
            by_job.setdefault(job_id, {})[fingerprint] = reason
        with self.server.pipeline(transaction=False) as pipe:
            for job_id, mapping in by_job.items():
                pipe.hset(self.keys.job_dropped(job_id), mapping=mapping)
                pipe.expire(self.keys.job_dropped(job_id), STATS_TTL_SECONDS)
            pipe.execute()

    def push_start(self, entries: Sequence[str | bytes]) -> int:
        """Append start entries (JSON) for workers to turn into requests."""
        if not entries:
            return 0
        return int(self.server.rpush(self.keys.start_urls, *entries))

    def lease(self, worker_id: str, n: int = 1) -> list[Lease]:
        k = self.keys
        flat = self._lease(
            keys=[
                k.queue,
                k.leases,
                k.lease_scores,
                k.lease_owners,
                k.lease_seq,
                k.worker_deadlines,
            ],
            args=[n, worker_id, k.worker_leases_prefix],
        )
        return [Lease(_text(flat[i]), flat[i + 1]) for i in range(0, len(flat), 2)]

    def lease_start(self, worker_id: str, n: int = 1) -> list[Lease]:
        k = self.keys
        flat = self._lease_start(
            keys=[
                k.start_urls,
                k.leases,
                k.lease_scores,
                k.lease_owners,
                k.lease_seq,
                k.worker_deadlines,
            ],
            args=[n, worker_id, START_MARKER, k.worker_leases_prefix],
        )
        return [Lease(_text(flat[i]), flat[i + 1], True) for i in range(0, len(flat), 2)]

    def ack(self, *lease_ids: str) -> int:
        if not lease_ids:
            return 0
        k = self.keys
        return int(
            self._ack(
                keys=[k.leases, k.lease_scores, k.lease_owners],
                args=[k.worker_leases_prefix, *lease_ids],
            )
        )

    def reclaim(
        self,
        *,
        release_worker: str = "",
        batch: int = RECLAIM_BATCH,
        rounds: int = RECLAIM_ROUNDS,
    ) -> int:
        """Re-queue leases of workers past their deadline (and all of ``release_worker``'s).

        Dead workers' leases are re-queued ``batch`` at a time, in at most ``rounds``
        script calls: what is left waits for the next call (the next heartbeat or drain
        poll). ``release_worker``'s leases are all released, ``batch`` at a time. Returns
        how many leases went back to the queue.
        """
        if batch < 1 or rounds < 1:
            raise ValueError("reclaim needs batch >= 1 and rounds >= 1")
        k = self.keys
        keys = [
            k.queue,
            k.leases,
            k.lease_scores,
            k.lease_owners,
            k.start_urls,
            k.worker_deadlines,
            k.lease_index,
        ]
        args = [
            k.worker_leases_prefix,
            START_MARKER,
            release_worker,
            batch,
            RECLAIM_WORKERS,
            k.worker_prefix,
        ]
        total = 0
        done_rounds = 0
        while True:
            requeued, dead_more, released_more = self._reclaim(keys=keys, args=args)
            total += int(requeued)
            done_rounds += 1
            if not int(released_more) and (not int(dead_more) or done_rounds >= rounds):
                return total

    def leases_of(self, worker_id: str) -> set[str]:
        """The lease ids Redis holds for ``worker_id``."""
        return {_text(i) for i in self.server.smembers(self.keys.worker_leases(worker_id))}

    def release(self, worker_id: str, *lease_ids: str) -> int:
        """Re-queue these leases of ``worker_id`` (ids it no longer owns are skipped);
        returns how many entries went back to the queue or start list."""
        if not lease_ids:
            return 0
        k = self.keys
        return int(
            self._release(
                keys=[k.queue, k.leases, k.lease_scores, k.lease_owners, k.start_urls],
                args=[k.worker_leases_prefix, START_MARKER, worker_id, *lease_ids],
            )
        )

    # -- inspection ------------------------------------------------------------------
    def queued(self) -> int:
        with self.server.pipeline(transaction=False) as pipe:
            pipe.zcard(self.keys.queue)
            pipe.llen(self.keys.start_urls)
            queued, starts = pipe.execute()
        return int(queued) + int(starts)

    def leased(self) -> int:
        return int(self.server.hlen(self.keys.leases))

    def leased_by(self) -> dict[str, int]:
        """Lease counts per owning worker: one SCARD per worker with a deadline (every
        worker holding leases has one), never a read of the leases themselves."""
        workers = [_text(w) for w in self.server.zrange(self.keys.worker_deadlines, 0, -1)]
        if not workers:
            return {}
        with self.server.pipeline(transaction=False) as pipe:
            for worker in workers:
                pipe.scard(self.keys.worker_leases(worker))
            counts = pipe.execute()
        return {w: int(n) for w, n in zip(workers, counts, strict=True) if int(n)}


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
