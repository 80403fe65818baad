"""The frontier's Lua scripts (``core.frontier.RedisFrontier`` registers them): each one
atomic step on the site's keys, all in its ``{<site>}`` slot (docs/frontier.md)."""

from __future__ import annotations

# Shared by the scripts: ``now`` is Redis' clock (epoch ms), never a worker's.
NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# Every lease id is also in its owner's set (``<worker_leases prefix><worker>``), and
# every owner with leases has a deadline; a worker that leased without ever sending a
# heartbeat is due at once (NX: a heartbeat's deadline is never shortened), as before
# the deadlines existed, when a missing heartbeat key meant dead.
# KEYS: queue, leases, scores, owners, lease_seq, deadlines
# ARGV: n, worker, worker_leases prefix
LEASE = (
    NOW
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
LEASE_START = (
    NOW
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
START_JOB = """
local t = redis.call('TIME')
redis.call('SET', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], tonumber(t[1]) + tonumber(t[2]) / 1000000, ARGV[1])
return t[1]
"""

# KEYS: leases, scores, owners ; ARGV: worker_leases prefix, lease ids...
ACK = """
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
PUSH_FUNCTION = """
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
PUSH_AND_ACK = (
    PUSH_FUNCTION
    + """
return push(KEYS[6], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6])
"""
)

# Several pushes in one round trip, each exactly as ``PUSH_AND_ACK``, in order.
# KEYS: queue, leases, scores, owners, push_seq, then one seen key per entry
# ARGV: seen TTL, worker_leases prefix, then per entry: priority, data, lease id, fingerprint
PUSH_MANY = (
    PUSH_FUNCTION
    + """
local out = {}
for i = 0, #KEYS - 6 do
  local a = 3 + i * 4
  out[i + 1] = push(KEYS[6 + i], ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[1], ARGV[2])
end
return out
"""
)

# Puts one lease's entry back where it came from (the queue at its old score, or the
# start list) and deletes the lease; an id not owned by ``worker`` (acked, or re-queued
# already) is left alone. Returns 1 when an entry went back, else 0.
# Needs KEYS[1..5]: queue, leases, scores, owners, start_list.
REQUEUE_FUNCTION = """
local function requeue_lease(id, worker, marker)
  if redis.call('HGET', KEYS[4], id) ~= worker then return 0 end
  local data = redis.call('HGET', KEYS[2], id)
  local score = redis.call('HGET', KEYS[3], id)
  redis.call('HDEL', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
  redis.call('HDEL', KEYS[4], id)
  if not data then return 0 end
  if score == marker then
    redis.call('RPUSH', KEYS[5], data)
  else
    redis.call('ZADD', KEYS[1], score, data)
  end
  return 1
end
"""

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
RECLAIM = (
    NOW
    + REQUEUE_FUNCTION
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
      requeued = requeued + requeue_lease(id, worker, marker)
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

# Re-queues leases a worker holds in Redis without knowing it: granted by a lease call
# whose reply was lost (the connection broke or timed out mid-call).
# KEYS: queue, leases, scores, owners, start_list
# ARGV: worker_leases prefix, start marker, worker, lease ids...
RELEASE = (
    REQUEUE_FUNCTION
    + """
local requeued = 0
for i = 4, #ARGV do
  requeued = requeued + requeue_lease(ARGV[i], ARGV[3], ARGV[2])
  redis.call('SREM', ARGV[1] .. ARGV[3], ARGV[i])
end
return requeued
"""
)
