"""A crash-safe request frontier in Redis: priority queue + leases, atomic in Lua.

Framework-agnostic: it stores opaque encoded requests. ``crawlers.frontier`` plugs it
into scrapy-redis' scheduler. Semantics:

* ``push``: add an encoded request; higher priority pops first, FIFO within a priority.
* ``lease``: atomically move up to ``n`` entries from the queue into the lease table,
  owned by a worker. A leased entry is in Redis until it is acked: a worker killed
  mid-request loses nothing.
* ``ack``: the worker finished with the entry (processed, or failed for good).
* ``push_and_ack``: a retry/redirect of a leased request replaces its lease in one step.
* ``reclaim``: leases whose owner's heartbeat key has expired go back to the queue with
  their original score (start entries back to the start list).

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

# KEYS: queue, leases, scores, owners, lease_seq ; ARGV: n, worker
_LEASE = """
local items = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')
if #items == 0 then return {} end
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, (#items / 2) - 1)
local out = {}
for i = 1, #items, 2 do
  local id = tostring(redis.call('INCR', KEYS[5]))
  redis.call('HSET', KEYS[2], id, items[i])
  redis.call('HSET', KEYS[3], id, items[i + 1])
  redis.call('HSET', KEYS[4], id, ARGV[2])
  table.insert(out, id)
  table.insert(out, items[i])
end
return out
"""

# KEYS: start_list, leases, scores, owners, lease_seq ; ARGV: n, worker, marker
_LEASE_START = """
local out = {}
for i = 1, tonumber(ARGV[1]) do
  local data = redis.call('LPOP', KEYS[1])
  if not data then break end
  local id = tostring(redis.call('INCR', KEYS[5]))
  redis.call('HSET', KEYS[2], id, data)
  redis.call('HSET', KEYS[3], id, ARGV[3])
  redis.call('HSET', KEYS[4], id, ARGV[2])
  table.insert(out, id)
  table.insert(out, data)
end
return out
"""

# KEYS: leases, scores, owners ; ARGV: lease ids...
_ACK = """
local n = 0
for i = 1, #ARGV do
  n = n + redis.call('HDEL', KEYS[1], ARGV[i])
  redis.call('HDEL', KEYS[2], ARGV[i])
  redis.call('HDEL', KEYS[3], ARGV[i])
end
return n
"""

# KEYS: queue, leases, scores, owners, push_seq, seen
# ARGV: priority, data, lease id ('' for none), fingerprint ('' = no dedup check), seen TTL
# The dedup check and the push are one round trip and atomic: two workers discovering the
# same URL at once queue it exactly once.
# Score: higher priority first, then FIFO by a push sequence (exact in a double).
_PUSH_AND_ACK = """
local function release_lease()
  if ARGV[3] ~= '' then
    redis.call('HDEL', KEYS[2], ARGV[3])
    redis.call('HDEL', KEYS[3], ARGV[3])
    redis.call('HDEL', KEYS[4], ARGV[3])
  end
end
if ARGV[4] ~= '' then
  local added = redis.call('SADD', KEYS[6], ARGV[4])
  redis.call('EXPIRE', KEYS[6], ARGV[5])
  if added == 0 then
    release_lease()
    return 0
  end
end
local seq = redis.call('INCR', KEYS[5]) % 10000000000
redis.call('ZADD', KEYS[1], -tonumber(ARGV[1]) * 10000000000 + seq, ARGV[2])
release_lease()
return 1
"""

# KEYS: queue, leases, scores, owners, start_list
# ARGV: heartbeat key prefix, start marker, worker to release ('' = only dead workers)
_RECLAIM = """
local owners = redis.call('HGETALL', KEYS[4])
local alive = {}
local n = 0
for i = 1, #owners, 2 do
  local id, worker = owners[i], owners[i + 1]
  if alive[worker] == nil then
    alive[worker] = worker ~= ARGV[3] and redis.call('EXISTS', ARGV[1] .. worker) == 1
  end
  if not alive[worker] then
    local data = redis.call('HGET', KEYS[2], id)
    local score = redis.call('HGET', KEYS[3], id)
    if data then
      if score == ARGV[2] then
        redis.call('RPUSH', KEYS[5], data)
      else
        redis.call('ZADD', KEYS[1], score, data)
      end
    end
    redis.call('HDEL', KEYS[2], id)
    redis.call('HDEL', KEYS[3], id)
    redis.call('HDEL', KEYS[4], id)
    n = n + 1
  end
end
return n
"""


@dataclass(frozen=True)
class Lease:
    lease_id: str
    data: bytes
    is_start: bool = False


class RedisFrontier:
    """One site's queue, start list and lease table."""

    def __init__(self, server: redis.Redis, site: str) -> None:
        self.server = server
        self.keys = SiteKeys(site)
        self._lease = server.register_script(_LEASE)
        self._lease_start = server.register_script(_LEASE_START)
        self._ack = server.register_script(_ACK)
        self._push_and_ack = server.register_script(_PUSH_AND_ACK)
        self._reclaim = server.register_script(_RECLAIM)

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
            args=[int(priority), data, replaces_lease or "", fingerprint or "", seen_ttl],
        )
        return bool(queued)

    def push_start(self, entries: Sequence[str | bytes]) -> int:
        """Append start entries (JSON) for workers to turn into requests."""
        if not entries:
            return 0
        return int(self.server.rpush(self.keys.start_urls, *entries))

    def lease(self, worker_id: str, n: int = 1) -> list[Lease]:
        k = self.keys
        flat = self._lease(
            keys=[k.queue, k.leases, k.lease_scores, k.lease_owners, k.lease_seq],
            args=[n, worker_id],
        )
        return [Lease(_text(flat[i]), flat[i + 1]) for i in range(0, len(flat), 2)]

    def lease_start(self, worker_id: str, n: int = 1) -> list[Lease]:
        k = self.keys
        flat = self._lease_start(
            keys=[k.start_urls, k.leases, k.lease_scores, k.lease_owners, k.lease_seq],
            args=[n, worker_id, START_MARKER],
        )
        return [Lease(_text(flat[i]), flat[i + 1], True) for i in range(0, len(flat), 2)]

    def ack(self, *lease_ids: str) -> int:
        if not lease_ids:
            return 0
        k = self.keys
        return int(self._ack(keys=[k.leases, k.lease_scores, k.lease_owners], args=lease_ids))

    def reclaim(self, *, release_worker: str = "") -> int:
        """Re-queue leases whose owner has no live heartbeat (and all of ``release_worker``).

        Returns how many leases went back to the queue.
        """
        k = self.keys
        return int(
            self._reclaim(
                keys=[k.queue, k.leases, k.lease_scores, k.lease_owners, k.start_urls],
                args=[k.worker_prefix, START_MARKER, release_worker],
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
        """Lease counts per owning worker."""
        counts: dict[str, int] = {}
        for owner in self.server.hvals(self.keys.lease_owners):
            counts[_text(owner)] = counts.get(_text(owner), 0) + 1
        return counts


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
