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

from core.keys import SiteKeys

# Entries of the start list are leased with this marker instead of a score.
START_MARKER = "start"

# Reclaim works in bounded steps: one script call re-queues at most RECLAIM_BATCH leases
# and looks at most at RECLAIM_WORKERS dead workers; ``reclaim()`` makes at most
# RECLAIM_ROUNDS calls, and the next heartbeat (or drain poll) continues the rest.
RECLAIM_BATCH = 500
RECLAIM_WORKERS = 32
RECLAIM_ROUNDS = 4

# Shared by the scripts: ``now`` is Redis' clock (epoch ms), never a worker's.
_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# Every lease id is also in its owner's set (``<worker_leases prefix><worker>``), and
# every owner with leases has a deadline; a worker that leased without ever sending a
# heartbeat is due at once (NX: a heartbeat's deadline is never shortened), as before
# the deadlines existed, when a missing heartbeat key meant dead.
# KEYS: queue, leases, scores, owners, lease_seq, deadlines
# ARGV: n, worker, worker_leases prefix
_LEASE = (
    _NOW
    + """
local items = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')
if #items == 0 then return {} end
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, (#items / 2) - 1)
local mine = ARGV[3] .. ARGV[2]
local out = {}
for i = 1, #items, 2 do
  local id = tostring(redis.call('INCR', KEYS[5]))
  redis.call('HSET', KEYS[2], id, items[i])
  redis.call('HSET', KEYS[3], id, items[i + 1])
  redis.call('HSET', KEYS[4], id, ARGV[2])
  redis.call('SADD', mine, id)
  table.insert(out, id)
  table.insert(out, items[i])
end
redis.call('ZADD', KEYS[6], 'NX', now, ARGV[2])
return out
"""
)

# KEYS: start_list, leases, scores, owners, lease_seq, deadlines
# ARGV: n, worker, marker, worker_leases prefix
_LEASE_START = (
    _NOW
    + """
local mine = ARGV[4] .. ARGV[2]
local out = {}
for i = 1, tonumber(ARGV[1]) do
  local data = redis.call('LPOP', KEYS[1])
  if not data then break end
  local id = tostring(redis.call('INCR', KEYS[5]))
  redis.call('HSET', KEYS[2], id, data)
  redis.call('HSET', KEYS[3], id, ARGV[3])
  redis.call('HSET', KEYS[4], id, ARGV[2])
  redis.call('SADD', mine, id)
  table.insert(out, id)
  table.insert(out, data)
end
if #out > 0 then redis.call('ZADD', KEYS[6], 'NX', now, ARGV[2]) end
return out
"""
)

# The job the start entries belong to becomes the site's current one; its start time
# (the jobs sorted set's score, epoch seconds) is Redis' clock, not the producer's.
# KEYS: current_job, jobs ; ARGV: job id
_START_JOB = """
local t = redis.call('TIME')
redis.call('SET', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], tonumber(t[1]) + tonumber(t[2]) / 1000000, ARGV[1])
return t[1]
"""

# KEYS: leases, scores, owners ; ARGV: worker_leases prefix, lease ids...
_ACK = """
local n = 0
for i = 2, #ARGV do
  local owner = redis.call('HGET', KEYS[3], ARGV[i])
  if owner then redis.call('SREM', ARGV[1] .. owner, ARGV[i]) end
  n = n + redis.call('HDEL', KEYS[1], ARGV[i])
  redis.call('HDEL', KEYS[2], ARGV[i])
  redis.call('HDEL', KEYS[3], ARGV[i])
end
return n
"""

# One push: the dedup check and the push are atomic, so two workers discovering the same
# URL at once queue it exactly once. If the entry continues a lease (a retry/redirect),
# that lease is released in the same step, queued or not.
# Score: higher priority first, then FIFO by a push sequence (exact in a double).
# Needs KEYS[1..5]: queue, leases, scores, owners, push_seq.
# push(seen key, priority, data, lease id ('' for none), fingerprint ('' = no dedup
# check), seen TTL, worker_leases prefix) -> 1 queued, 0 seen before
_PUSH_FUNCTION = """
local function push(seen, priority, data, lease, fingerprint, ttl, prefix)
  local function release_lease()
    if lease ~= '' then
      local owner = redis.call('HGET', KEYS[4], lease)
      if owner then redis.call('SREM', prefix .. owner, lease) end
      redis.call('HDEL', KEYS[2], lease)
      redis.call('HDEL', KEYS[3], lease)
      redis.call('HDEL', KEYS[4], lease)
    end
  end
  if fingerprint ~= '' then
    local added = redis.call('SADD', seen, fingerprint)
    redis.call('EXPIRE', seen, ttl)
    if added == 0 then
      release_lease()
      return 0
    end
  end
  local seq = redis.call('INCR', KEYS[5]) % 10000000000
  redis.call('ZADD', KEYS[1], -tonumber(priority) * 10000000000 + seq, data)
  release_lease()
  return 1
end
"""

# KEYS: queue, leases, scores, owners, push_seq, seen
# ARGV: priority, data, lease id, fingerprint, seen TTL, worker_leases prefix
_PUSH_AND_ACK = (
    _PUSH_FUNCTION
    + """
return push(KEYS[6], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6])
"""
)

# Several pushes in one round trip, each exactly as ``_PUSH_AND_ACK``, in order.
# KEYS: queue, leases, scores, owners, push_seq, then one seen key per entry
# ARGV: seen TTL, worker_leases prefix, then per entry: priority, data, lease id, fingerprint
_PUSH_MANY = (
    _PUSH_FUNCTION
    + """
local out = {}
for i = 0, #KEYS - 6 do
  local a = 3 + i * 4
  out[i + 1] = push(KEYS[6 + i], ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[1], ARGV[2])
end
return out
"""
)

# Dead workers are the members of the deadlines set due by Redis' clock; each call
# re-queues at most ``batch`` of their leases, popped from their lease sets, so its cost
# does not depend on how many leases live workers hold. A dead worker whose set is empty
# leaves the deadlines set. Returns {re-queued, more dead workers' leases left, more of
# the released worker's leases left}.
#
# The first call on a Redis holding leases taken before the lease sets existed indexes
# them once (HGETALL of the owners, then the marker): their owners get a deadline from
# their heartbeat key's remaining TTL.
# KEYS: queue, leases, scores, owners, start_list, deadlines, index marker
# ARGV: worker_leases prefix, start marker, worker to release ('' = only dead workers),
#       batch, dead workers per call, heartbeat key prefix
_RECLAIM = (
    _NOW
    + """
local prefix, marker = ARGV[1], ARGV[2]
local budget = tonumber(ARGV[4])
local requeued = 0

if redis.call('EXISTS', KEYS[7]) == 0 then
  local owners = redis.call('HGETALL', KEYS[4])
  local indexed = {}
  for i = 1, #owners, 2 do
    local id, worker = owners[i], owners[i + 1]
    redis.call('SADD', prefix .. worker, id)
    if not indexed[worker] then
      indexed[worker] = true
      local ttl = redis.call('PTTL', ARGV[6] .. worker)
      redis.call('ZADD', KEYS[6], 'GT', now + math.max(ttl, 0), worker)
    end
  end
  redis.call('SET', KEYS[7], '1')
end

-- Re-queue up to the budget of ``worker``'s leases; true when none is left.
local function requeue(worker)
  local set = prefix .. worker
  if budget > 0 then
    local ids = redis.call('SPOP', set, budget)
    budget = budget - #ids
    for _, id in ipairs(ids) do
      -- An id whose lease was acked by a client without lease sets is skipped.
      if redis.call('HGET', KEYS[4], id) == worker then
        local data = redis.call('HGET', KEYS[2], id)
        local score = redis.call('HGET', KEYS[3], id)
        if data then
          if score == marker then
            redis.call('RPUSH', KEYS[5], data)
          else
            redis.call('ZADD', KEYS[1], score, data)
          end
          requeued = requeued + 1
        end
        redis.call('HDEL', KEYS[2], id)
        redis.call('HDEL', KEYS[3], id)
        redis.call('HDEL', KEYS[4], id)
      end
    end
  end
  return redis.call('EXISTS', set) == 0
end

local released_more = 0
if ARGV[3] ~= '' and not requeue(ARGV[3]) then released_more = 1 end

local dead_more = 0
local limit = tonumber(ARGV[5])
local dead = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', now, 'LIMIT', 0, limit)
if #dead == limit then dead_more = 1 end
for _, worker in ipairs(dead) do
  if requeue(worker) then
    redis.call('ZREM', KEYS[6], worker)
  else
    dead_more = 1
    break
  end
end
return {requeued, dead_more, released_more}
"""
)


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
        self._lease = server.register_script(_LEASE)
        self._lease_start = server.register_script(_LEASE_START)
        self._ack = server.register_script(_ACK)
        self._push_and_ack = server.register_script(_PUSH_AND_ACK)
        self._push_many = server.register_script(_PUSH_MANY)
        self._reclaim = server.register_script(_RECLAIM)
        self._start_job = server.register_script(_START_JOB)

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

    def start_job(self, job_id: str) -> None:
        """Make ``job_id`` the site's current job, started now by Redis' clock."""
        self._start_job(keys=[self.keys.current_job, self.keys.jobs], args=[job_id])

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
