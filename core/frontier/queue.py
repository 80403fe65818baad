"""A crash-safe request frontier in Redis: priority queue + leases, atomic in Lua, split
into partitions so one site's frontier spreads over a Redis Cluster's masters.

``RedisFrontier`` stores opaque encoded requests: ``push`` (priority, FIFO within one;
the fingerprint picks the partition, where its seen-set lives too), ``lease`` (entries
move to the lease table, owned by a worker), ``ack``, ``push`` replacing a lease (a retry
or redirect), and ``reclaim`` (leases of workers past their deadline go back, in bounded
batches). Start entries are leased the same way. No Scrapy here
(``crawlers.frontier.scheduler`` plugs it in).

Reads: the site's frontier keys (``core.keys.SiteKeys``). Semantics: docs/frontier.md
"Lease -> ack" and "Partitions: one site over a cluster's masters".
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import count
from typing import cast

from redis.commands.core import Script
from redis.typing import EncodableT, FieldT

from core.frontier.layout import (
    FrontierLayoutError,
    check_format,
    lease_partition,
    partition_of,
    seen_bucket,
    stored_partitions,
)
from core.lua import load_script

__all__ = [
    "FrontierLayoutError",
    "Lease",
    "Push",
    "RedisFrontier",
    "lease_partition",
    "partition_of",
]
from core.figures.stats import STATS_TTL_SECONDS
from core.keys import FrontierKeys, SiteKeys
from core.redis_client import Client

# Entries of the start list are leased with this marker instead of a priority.
START_MARKER = "start"

# Reclaim works in bounded steps: one round re-queues at most RECLAIM_BATCH leases per
# partition of at most RECLAIM_WORKERS dead workers; ``reclaim()`` makes at most
# RECLAIM_ROUNDS rounds, and the next heartbeat (or drain poll) continues the rest.
RECLAIM_BATCH = 500
RECLAIM_WORKERS = 32
RECLAIM_ROUNDS = 4

SEEN_TTL_SECONDS = 7 * 24 * 3600


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
    seen_job: str | None = None
    fingerprint: bytes | None = None


class RedisFrontier:
    """One site's queue, start lists and lease tables over its partitions.

    ``partitions``: None reads the count recorded in Redis (``adopt`` records it).
    """

    def __init__(self, server: Client, site: str, partitions: int | None = None) -> None:
        self.server = server
        self.site = site
        self.keys = SiteKeys(site)
        self._parts: list[FrontierKeys] | None = None
        if partitions is not None:
            self._set_partitions(partitions)
        self._rotation = count()

        def register(name: str) -> Script:
            return server.register_script(load_script("core.frontier", name))

        self._lease, self._lease_start = register("lease"), register("lease_start")
        self._ack, self._push_many = register("ack"), register("push_many")
        self._reclaim, self._release = register("reclaim"), register("release")
        self._due, self._forget = register("due_workers"), register("forget_workers")
        self._ensure_deadline = register("ensure_deadline")
        self._count, self._clear = register("count"), register("clear")
        self._start_job = register("start_job")

    def _set_partitions(self, n: int) -> None:
        if n < 1:
            raise ValueError(f"a frontier needs at least 1 partition, got {n}")
        self._parts = [self.keys.partition(i, n) for i in range(n)]

    @property
    def parts(self) -> list[FrontierKeys]:
        """The keys of each partition (the count recorded in Redis, read on first use)."""
        if self._parts is None:
            self._set_partitions(stored_partitions(self.server, self.site))
        assert self._parts is not None
        return self._parts

    @property
    def partitions(self) -> int:
        return len(self.parts)

    # -- layout ----------------------------------------------------------------------
    @classmethod
    def adopt(cls, server: Client, site: str, partitions: int) -> RedisFrontier:
        """The site's frontier with ``partitions`` recorded as its layout (by the producer
        of a job). Refused, in one line naming the fix, while the frontier holds work in
        the previous format or under another partition count."""
        check_format(server, site)
        stored = stored_partitions(server, site)
        if stored != partitions:
            old = cls(server, site, stored)
            queued, leased = old.queued(), old.leased()
            if queued or leased:
                raise FrontierLayoutError(
                    f"{site}: the frontier holds {queued} queued and {leased} leased requests "
                    f"in {stored} partition(s) but FRONTIER_PARTITIONS is {partitions}: let "
                    f"the job drain (or set FRONTIER_PARTITIONS={stored}) before changing it"
                )
            server.set(SiteKeys(site).frontier_partitions, partitions)
        return cls(server, site, partitions)

    def refresh(self) -> None:
        """Follow the partition count recorded in Redis (a new job may have changed it)."""
        n = stored_partitions(self.server, self.site)
        if n != self.partitions:
            self._set_partitions(n)

    def join(self, partitions: int) -> None:
        """A worker's start: refuse the previous format; record ``partitions`` (its
        FRONTIER_PARTITIONS) unless a producer or worker recorded a count already, and
        follow the recorded one."""
        check_format(self.server, self.site)
        self.server.set(self.keys.frontier_partitions, partitions, nx=True)
        self._set_partitions(stored_partitions(self.server, self.site))

    # -- queue ---------------------------------------------------------------------
    def push(
        self,
        data: bytes,
        priority: int = 0,
        *,
        replaces_lease: str | None = None,
        seen_job: str | None = None,
        fingerprint: bytes | None = None,
        seen_ttl: int = SEEN_TTL_SECONDS,
    ) -> bool:
        """Queue ``data`` unless ``fingerprint`` is in the seen-set of ``seen_job``.

        If it continues a leased request (a retry or redirect), that lease is released,
        whether or not the entry was queued. Returns True when queued.
        """
        entry = Push(data, priority, replaces_lease, seen_job, fingerprint)
        return self.push_many([entry], seen_ttl=seen_ttl)[0]

    def push_many(self, entries: Sequence[Push], *, seen_ttl: int = SEEN_TTL_SECONDS) -> list[bool]:
        """``push`` for each entry, in order; one round trip per partition they go to
        (plus one per partition of leases they replace in another partition)."""
        by_part: dict[int, list[int]] = {}
        for i, entry in enumerate(entries):
            if entry.seen_job is not None and entry.fingerprint is None:
                raise ValueError("a seen-set check needs the request's fingerprint")
            by_part.setdefault(self._partition_for(entry), []).append(i)
        results = [False] * len(entries)
        later: list[str] = []
        for p, indexes in by_part.items():
            part = self.parts[p]
            keys = [part.priorities, part.leases, part.lease_priorities, part.lease_owners]
            args: list[bytes | str | int] = [seen_ttl, part.queue_prefix, part.worker_leases_prefix]
            for i in indexes:
                entry = entries[i]
                lease = entry.replaces_lease or ""
                if lease and lease_partition(lease) != p:
                    later.append(lease)  # ended after its continuation is queued
                    lease = ""
                else:
                    lease = lease.partition(".")[2]
                if entry.seen_job is not None and entry.fingerprint is not None:
                    bucket, field = seen_bucket(entry.fingerprint)
                    keys.append(part.seen(entry.seen_job, bucket))
                    args += ["1", field]
                else:
                    keys.append(part.priorities)
                    args += ["0", ""]
                args += [int(entry.priority), entry.data, lease]
            for i, queued in zip(indexes, self._push_many(keys=keys, args=args), strict=True):
                results[i] = bool(queued)
        if later:
            self.ack(*later)
        return results

    def _partition_for(self, entry: Push) -> int:
        """The fingerprint's partition (where its seen-set is); a retry without a dedup
        check stays in its lease's partition (one atomic step); else by the data's hash."""
        if self.partitions == 1:
            return 0
        if entry.seen_job is None and entry.replaces_lease:
            return lease_partition(entry.replaces_lease) % self.partitions
        if entry.fingerprint is not None:
            return partition_of(entry.fingerprint, self.partitions)
        return zlib.crc32(entry.data) % self.partitions

    def seen(self, job_id: str, fingerprint: bytes, *, ttl: int = SEEN_TTL_SECONDS) -> bool:
        """Add ``fingerprint`` to the job's seen-set; True when it was there already."""
        part = self.parts[partition_of(fingerprint, self.partitions)]
        bucket, field = seen_bucket(fingerprint)
        key = part.seen(job_id, bucket)
        with self.server.pipeline(transaction=True) as pipe:
            pipe.hsetnx(key, field, "")
            pipe.expire(key, ttl)
            added, _ = pipe.execute()
        return not added

    def start_job(self, job_id: str, *, layout: str | None = None) -> None:
        """Make ``job_id`` the site's current job, started now by Redis' clock.

        ``layout``: the id of the site's accepted fingerprint baseline (``core.recrawl.layouts``)
        the job's re-crawl records belong to; None leaves the job's workers to their own.
        """
        self._start_job(keys=[self.keys.current_job, self.keys.jobs], args=[job_id])
        if layout is not None:
            self.server.set(self.keys.job_layout(job_id), layout, ex=STATS_TTL_SECONDS)

    def record_drops(self, drops: Sequence[tuple[str, str, str]]) -> None:
        """Record ``(job id, request fingerprint, reason)`` of leased requests some
        component dropped (``crawlers.frontier.fates``), in the job's ledger
        (``core.figures.ledger.dropped_figures`` counts them). Idempotent per request."""
        by_job: dict[str, dict[FieldT, EncodableT]] = {}
        for job_id, fingerprint, reason in drops:
            by_job.setdefault(job_id, {})[fingerprint] = reason
        with self.server.pipeline(transaction=False) as pipe:
            for job_id, mapping in by_job.items():
                pipe.hset(self.keys.job_dropped(job_id), mapping=mapping)
                pipe.expire(self.keys.job_dropped(job_id), STATS_TTL_SECONDS)
            pipe.execute()

    def push_start(self, entries: Sequence[str | bytes]) -> int:
        """Append start entries (JSON) for workers to turn into requests, spread over
        the partitions by their hash."""
        by_part: dict[int, list[str | bytes]] = {}
        for entry in entries:
            raw = entry.encode() if isinstance(entry, str) else entry
            by_part.setdefault(zlib.crc32(raw) % self.partitions, []).append(entry)
        return sum(int(self.server.rpush(self.parts[p].start_urls, *e)) for p, e in by_part.items())

    def lease(self, worker_id: str, n: int = 1) -> list[Lease]:
        """Up to ``n`` entries of the partition whose head has the highest priority (ties:
        in turn), none of a lower priority than another partition's head."""
        if self.partitions == 1:
            return self._lease_from(0, worker_id, n, "")
        heads = self._heads()
        order = sorted(
            heads, key=lambda p: (-heads[p], (p - next(self._rotation)) % self.partitions)
        )
        for rank, p in enumerate(order):
            floor = str(heads[order[rank + 1]]) if rank + 1 < len(order) else ""
            leases = self._lease_from(p, worker_id, n, floor)
            if leases:
                return leases
        return []

    def _heads(self) -> dict[int, int]:
        """Each partition's highest queued priority (partitions with entries only)."""
        with self.server.pipeline(transaction=False) as pipe:
            for part in self.parts:
                pipe.zrange(part.priorities, 0, 0)
            heads = pipe.execute()
        return {p: int(head[0]) for p, head in enumerate(heads) if head}

    def _lease_from(self, p: int, worker_id: str, n: int, floor: str) -> list[Lease]:
        part = self.parts[p]
        keys = [part.priorities, part.leases, part.lease_priorities, part.lease_owners]
        keys += [part.lease_seq, *self._deadlines_in_slot()]
        args: list[EncodableT] = [n, worker_id, part.queue_prefix, part.worker_leases_prefix, floor]
        return self._leased(p, worker_id, self._lease(keys=keys, args=args), False)

    def lease_start(self, worker_id: str, n: int = 1) -> list[Lease]:
        start = next(self._rotation)
        for i in range(self.partitions):
            p = (start + i) % self.partitions
            part = self.parts[p]
            keys = [part.start_urls, part.leases, part.lease_priorities, part.lease_owners]
            keys += [part.lease_seq, *self._deadlines_in_slot()]
            args: list[EncodableT] = [n, worker_id, START_MARKER, part.worker_leases_prefix]
            leases = self._leased(p, worker_id, self._lease_start(keys=keys, args=args), True)
            if leases:
                return leases
        return []

    def _deadlines_in_slot(self) -> list[str]:
        return [self.keys.worker_deadlines] if self.partitions == 1 else []

    def _leased(self, p: int, worker_id: str, flat: list, is_start: bool) -> list[Lease]:
        if flat and self.partitions > 1:
            self._ensure_deadline(keys=[self.keys.worker_deadlines], args=[worker_id])
        return [
            Lease(f"{p}.{_text(flat[i])}", flat[i + 1], is_start) for i in range(0, len(flat), 2)
        ]

    def ack(self, *lease_ids: str) -> int:
        acked = 0
        for p, ids in self._by_partition(lease_ids).items():
            part = self.parts[p]
            keys = [part.leases, part.lease_priorities, part.lease_owners]
            acked += int(self._ack(keys=keys, args=[part.worker_leases_prefix, *ids]))
        return acked

    def _by_partition(self, lease_ids: Sequence[str]) -> dict[int, list[str]]:
        by_part: dict[int, list[str]] = {}
        for lease_id in lease_ids:
            p, _, n = lease_id.partition(".")
            if int(p) < self.partitions:
                by_part.setdefault(int(p), []).append(n)
        return by_part

    def reclaim(
        self,
        *,
        release_worker: str = "",
        batch: int = RECLAIM_BATCH,
        rounds: int = RECLAIM_ROUNDS,
    ) -> int:
        """Re-queue leases of workers past their deadline (and all of ``release_worker``'s).

        Each round re-queues at most ``batch`` leases per partition, and at most
        ``rounds`` rounds run: what is left waits for the next call (the next heartbeat
        or drain poll). ``release_worker``'s leases are all released, a round at a time.
        Returns how many leases went back to the queue.
        """
        if batch < 1 or rounds < 1:
            raise ValueError("reclaim needs batch >= 1 and rounds >= 1")
        total = 0
        done_rounds = 0
        while True:
            dead = [
                _text(w)
                for w in self._due(keys=[self.keys.worker_deadlines], args=[RECLAIM_WORKERS])
            ]
            workers = list(dict.fromkeys([release_worker, *dead] if release_worker else dead))
            if not workers:
                return total
            holding: set[str] = set()
            for part in self.parts:
                args: list[EncodableT] = [
                    part.queue_prefix,
                    part.worker_leases_prefix,
                    START_MARKER,
                    batch,
                ]
                out = self._reclaim(keys=self._requeue_keys(part), args=[*args, *workers])
                total += int(out[0])
                holding.update(_text(w) for w in out[1:])
            done = [w for w in dead if w not in holding]
            if done:
                self._forget(keys=[self.keys.worker_deadlines], args=done)
            done_rounds += 1
            released_more = release_worker in holding
            dead_more = len(dead) == RECLAIM_WORKERS or len(done) < len(dead)
            if not released_more and (not dead_more or done_rounds >= rounds):
                return total

    @staticmethod
    def _requeue_keys(p: FrontierKeys) -> list[str]:
        return [p.priorities, p.leases, p.lease_priorities, p.lease_owners, p.start_urls]

    def leases_of(self, worker_id: str) -> set[str]:
        """The lease ids Redis holds for ``worker_id``, in every partition."""
        with self.server.pipeline(transaction=False) as pipe:
            for part in self.parts:
                pipe.smembers(part.worker_leases(worker_id))
            sets = pipe.execute()
        return {f"{p}.{_text(i)}" for p, ids in enumerate(sets) for i in ids}

    def release(self, worker_id: str, *lease_ids: str) -> int:
        """Re-queue these leases of ``worker_id`` (ids it no longer owns are skipped);
        returns how many entries went back to the queue or start list."""
        released = 0
        for p, ids in self._by_partition(lease_ids).items():
            part = self.parts[p]
            args = [part.queue_prefix, part.worker_leases_prefix, START_MARKER, worker_id, *ids]
            released += int(self._release(keys=self._requeue_keys(part), args=args))
        return released

    def clear(self) -> int:
        """Empty every partition's queue and start list (leases stay, to be acked);
        returns how many entries were dropped."""
        return sum(
            int(self._clear(keys=[p.priorities, p.start_urls], args=[p.queue_prefix]))
            for p in self.parts
        )

    # -- inspection ------------------------------------------------------------------
    def queued(self) -> int:
        return sum(self.queued_by_partition())

    def queued_by_partition(self) -> list[int]:
        """Entries queued (start entries included) in each partition."""
        return [
            int(self._count(keys=[p.priorities, p.start_urls], args=[p.queue_prefix]))
            for p in self.parts
        ]

    def leased(self) -> int:
        with self.server.pipeline(transaction=False) as pipe:
            for part in self.parts:
                pipe.hlen(part.leases)
            return sum(int(n) for n in pipe.execute())

    def leased_by(self) -> dict[str, int]:
        """Lease counts per owning worker: one SCARD per worker with a deadline (every
        worker holding leases has one) and partition, never a read of the leases."""
        # ZRANGE without WITHSCORES answers the members alone.
        members = cast("list[bytes]", self.server.zrange(self.keys.worker_deadlines, 0, -1))
        workers = [_text(w) for w in members]
        if not workers:
            return {}
        with self.server.pipeline(transaction=False) as pipe:
            for worker in workers:
                for part in self.parts:
                    pipe.scard(part.worker_leases(worker))
            counts = pipe.execute()
        n = self.partitions
        totals = {
            w: sum(int(c) for c in counts[i * n : (i + 1) * n]) for i, w in enumerate(workers)
        }
        return {w: total for w, total in totals.items() if total}


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
