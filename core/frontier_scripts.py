"""The frontier's Lua scripts (``core.frontier.RedisFrontier`` registers them). Each is one
atomic step on the keys of ONE partition (``core.keys.FrontierKeys``, one slot), except
the three on the site's own keys (worker deadlines, the current job); docs/frontier.md.

A partition's queue is one list per priority (``<queue prefix><priority>``, FIFO) and a
sorted set of the priorities that have entries: a list costs a few bytes per entry, a
sorted set ~90. Per-priority and per-worker keys are built in the scripts from a prefix,
in the partition's slot.
"""

from __future__ import annotations

# Shared by the scripts: ``now`` is Redis' clock (epoch ms), never a worker's.
NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# Records one leased entry; needs KEYS[2..5]: leases, priorities of leases, owners, seq.
RECORD_FUNCTION = """
local function record(out, mine, worker, data, priority)
  local id = tostring(redis.call('INCR', KEYS[5]))
  redis.call('HSET', KEYS[2], id, data)
  redis.call('HSET', KEYS[3], id, priority)
  redis.call('HSET', KEYS[4], id, worker)
  redis.call('SADD', mine, id)
  table.insert(out, id)
  table.insert(out, data)
end
"""

# Leases up to n entries, highest priority first, none below ``floor`` ('' = any): the
# highest head of another partition, so a batch never passes over better work elsewhere.
# With one partition the site's deadlines set is in the slot (KEYS[6]): a worker that
# leased without ever sending a heartbeat is due at once (NX: a heartbeat's deadline is
# never shortened); with more, ``ENSURE_DEADLINE`` does it.
# KEYS: priorities, leases, lease priorities, owners, lease_seq[, deadlines]
# ARGV: n, worker, queue prefix, worker_leases prefix, floor
LEASE = (
    NOW
    + RECORD_FUNCTION
    + """
local n = tonumber(ARGV[1])
local mine = ARGV[4] .. ARGV[2]
local out = {}
while #out < 2 * n do
  local head = redis.call('ZRANGE', KEYS[1], 0, 0)
  if #head == 0 then break end
  local priority = head[1]
  if ARGV[5] ~= '' and tonumber(priority) < tonumber(ARGV[5]) then break end
  local list = ARGV[3] .. priority
  local items = redis.call('LPOP', list, n - #out / 2)
  if items then
    for _, data in ipairs(items) do record(out, mine, ARGV[2], data, priority) end
  end
  if redis.call('EXISTS', list) == 0 then redis.call('ZREM', KEYS[1], priority) end
end
if #out > 0 and KEYS[6] then redis.call('ZADD', KEYS[6], 'NX', now, ARGV[2]) end
return out
"""
)

# KEYS: start_list, leases, lease priorities, owners, lease_seq[, deadlines]
# ARGV: n, worker, marker, worker_leases prefix
LEASE_START = (
    NOW
    + RECORD_FUNCTION
    + """
local mine = ARGV[4] .. ARGV[2]
local out = {}
for i = 1, tonumber(ARGV[1]) do
  local data = redis.call('LPOP', KEYS[1])
  if not data then break end
  record(out, mine, ARGV[2], data, ARGV[3])
end
if #out > 0 and KEYS[6] then redis.call('ZADD', KEYS[6], 'NX', now, ARGV[2]) end
return out
"""
)

# The site's deadlines set, for a worker that leased in a partition outside its slot.
# KEYS: deadlines ; ARGV: worker
ENSURE_DEADLINE = (
    NOW
    + """
return redis.call('ZADD', KEYS[1], 'NX', now, ARGV[1])
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

# Ends leases (no requeue); needs KEYS[1..3]: leases, lease priorities, owners.
END_FUNCTION = """
local function end_lease(id, prefix)
  local owner = redis.call('HGET', KEYS[3], id)
  if owner then redis.call('SREM', prefix .. owner, id) end
  redis.call('HDEL', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
  return redis.call('HDEL', KEYS[1], id)
end
"""

# KEYS: leases, lease priorities, owners ; ARGV: worker_leases prefix, lease ids...
ACK = (
    END_FUNCTION
    + """
local n = 0
for i = 2, #ARGV do n = n + end_lease(ARGV[i], ARGV[1]) end
return n
"""
)

# One push: the dedup check and the push are atomic, so two workers discovering the same
# URL at once queue it exactly once. If the entry continues a lease of this partition (a
# retry/redirect), that lease ends in the same step, queued or not. The seen-set is a
# hash per fingerprint bucket (``FrontierKeys.seen``): field = the digest's other bytes.
# Needs KEYS[1..4]: priorities, leases, lease priorities, owners.
# push(seen key, dedup '1'/'0', field, priority, data, lease id ('' for none), seen TTL,
# queue prefix, worker_leases prefix) -> 1 queued, 0 seen before
PUSH_FUNCTION = """
local function push(seen, dedup, field, priority, data, lease, ttl, qprefix, lprefix)
  local function release_lease()
    if lease ~= '' then
      local owner = redis.call('HGET', KEYS[4], lease)
      if owner then redis.call('SREM', lprefix .. owner, lease) end
      redis.call('HDEL', KEYS[2], lease)
      redis.call('HDEL', KEYS[3], lease)
      redis.call('HDEL', KEYS[4], lease)
    end
  end
  if dedup == '1' then
    local added = redis.call('HSETNX', seen, field, '')
    redis.call('EXPIRE', seen, ttl)
    if added == 0 then
      release_lease()
      return 0
    end
  end
  redis.call('RPUSH', qprefix .. priority, data)
  redis.call('ZADD', KEYS[1], -tonumber(priority), priority)
  release_lease()
  return 1
end
"""

# Several pushes into one partition in one round trip, each as above, in order.
# KEYS: priorities, leases, lease priorities, owners, then one seen key per entry
# ARGV: seen TTL, queue prefix, worker_leases prefix, then per entry:
#       dedup, field, priority, data, lease id
PUSH_MANY = (
    PUSH_FUNCTION
    + """
local out = {}
for i = 0, #KEYS - 5 do
  local a = 4 + i * 5
  out[i + 1] = push(KEYS[5 + i], ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3],
    ARGV[a + 4], ARGV[1], ARGV[2], ARGV[3])
end
return out
"""
)

# Puts one lease's entry back where it came from (the front of its priority's list: it
# was due already; or the start list) and deletes the lease; an id not owned by
# ``worker`` (acked, or re-queued already) is left alone. Returns 1 when an entry went
# back, else 0. Needs KEYS[1..5]: priorities, leases, lease priorities, owners, start_list.
REQUEUE_FUNCTION = """
local function requeue_lease(id, worker, marker, qprefix)
  if redis.call('HGET', KEYS[4], id) ~= worker then return 0 end
  local data = redis.call('HGET', KEYS[2], id)
  local priority = redis.call('HGET', KEYS[3], id)
  redis.call('HDEL', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
  redis.call('HDEL', KEYS[4], id)
  if not data then return 0 end
  if priority == marker then
    redis.call('RPUSH', KEYS[5], data)
  else
    redis.call('LPUSH', qprefix .. priority, data)
    redis.call('ZADD', KEYS[1], -tonumber(priority), priority)
  end
  return 1
end
"""

# The workers due by Redis' clock (the site's deadlines set), at most ``limit``.
# KEYS: deadlines ; ARGV: limit
DUE_WORKERS = (
    NOW
    + """
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
"""
)

# Dead workers whose leases are all re-queued leave the deadlines set, unless a
# heartbeat revived them meanwhile. KEYS: deadlines ; ARGV: workers
FORGET_WORKERS = (
    NOW
    + """
local n = 0
for _, worker in ipairs(ARGV) do
  local deadline = redis.call('ZSCORE', KEYS[1], worker)
  if deadline and tonumber(deadline) <= now then
    n = n + redis.call('ZREM', KEYS[1], worker)
  end
end
return n
"""
)

# Re-queues at most ``batch`` leases of the given workers in one partition, popped from
# their lease sets: its cost does not depend on the leases live workers hold. Returns
# {re-queued, workers that still hold leases in this partition...}.
# KEYS: priorities, leases, lease priorities, owners, start_list
# ARGV: queue prefix, worker_leases prefix, start marker, batch, workers...
RECLAIM = (
    REQUEUE_FUNCTION
    + """
local budget = tonumber(ARGV[4])
local requeued = 0
local out = {0}
for i = 5, #ARGV do
  local worker = ARGV[i]
  local set = ARGV[2] .. worker
  if budget > 0 then
    local ids = redis.call('SPOP', set, budget)
    budget = budget - #ids
    for _, id in ipairs(ids) do
      requeued = requeued + requeue_lease(id, worker, ARGV[3], ARGV[1])
    end
  end
  if redis.call('EXISTS', set) == 1 then table.insert(out, worker) end
end
out[1] = requeued
return out
"""
)

# Re-queues leases a worker holds in Redis without knowing it: granted by a lease call
# whose reply was lost (the connection broke or timed out mid-call).
# KEYS: priorities, leases, lease priorities, owners, start_list
# ARGV: queue prefix, worker_leases prefix, start marker, worker, lease ids...
RELEASE = (
    REQUEUE_FUNCTION
    + """
local requeued = 0
for i = 5, #ARGV do
  requeued = requeued + requeue_lease(ARGV[i], ARGV[4], ARGV[3], ARGV[1])
  redis.call('SREM', ARGV[2] .. ARGV[4], ARGV[i])
end
return requeued
"""
)

# Entries queued in one partition (every priority's list and the start list).
# KEYS: priorities, start_list ; ARGV: queue prefix
COUNT = """
local n = redis.call('LLEN', KEYS[2])
for _, priority in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  n = n + redis.call('LLEN', ARGV[1] .. priority)
end
return n
"""

# Empties one partition's queue and start list (a job's budget ended it); leases stay
# to be acked. KEYS: priorities, start_list ; ARGV: queue prefix
CLEAR = """
local n = redis.call('LLEN', KEYS[2])
for _, priority in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  n = n + redis.call('LLEN', ARGV[1] .. priority)
  redis.call('DEL', ARGV[1] .. priority)
end
redis.call('DEL', KEYS[1], KEYS[2])
return n
"""
