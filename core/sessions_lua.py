"""The Lua scripts of the fetch-session pool in Redis (``core.sessions_redis`` runs them).

Each step of the pool is one script, run atomically: every key under the site's hash tag
(``core.keys.SiteKeys``), so a Redis Cluster runs them as one Redis does, and time is
Redis' clock (``TIME``), never a worker's. Each is headed by its KEYS and ARGV.

A script that creates, clears or retires a session also writes the event into the job's
ledger hash (``SiteKeys.job_sessions``, the last KEY; the last ARGV its TTL, 0 for no
job): the session and the report's record of it exist together or not at all.
"""

from __future__ import annotations

# Shared by the scripts: ``now`` is Redis' clock (epoch ms), never a worker's.
_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# The job's ledger: the last KEY (its sessions hash, or any key of the site without a
# job), the last ARGV its TTL in seconds (0: no job, nothing written).
_LEDGER_FUNCTION = """
local function ledger(field, value)
  local ttl = tonumber(ARGV[#ARGV])
  if ttl > 0 then
    redis.call('HSET', KEYS[#KEYS], field, value)
    redis.call('EXPIRE', KEYS[#KEYS], ttl)
  end
end
"""

# Retire one session: out of the pool, its proxy's count down, its record kept a day, the
# ledger told. Needs KEYS[1] pool, KEYS[2] per-proxy counts; ARGV[1] the session prefix.
_RETIRE_FUNCTION = (
    _LEDGER_FUNCTION
    + """
local function retire(id, reason, ttl)
  local key = ARGV[1] .. id
  local state = redis.call('HGET', key, 'state')
  redis.call('ZREM', KEYS[1], id)
  if (not state) or state == 'retired' then return 0 end
  local proxy = redis.call('HGET', key, 'proxy')
  if proxy then
    if tonumber(redis.call('HINCRBY', KEYS[2], proxy, -1)) <= 0 then
      redis.call('HDEL', KEYS[2], proxy)
    end
  end
  redis.call('HSET', key, 'state', 'retired', 'reason', reason)
  redis.call('EXPIRE', key, ttl)
  redis.call('EXPIRE', key .. ':cookies', ttl)
  ledger('retired:' .. id, reason)
  return 1
end
"""
)

# KEYS: pool, proxy counts, ledger ; ARGV: session prefix, interval ms, max uses, max age
# ms, max sessions, hold ms, scan limit, retired ttl, excluded proxies (JSON list), the
# preferred session ('' none), ledger ttl
# -> {'use'|'probe', id, identity, proxy, generation, cookie, cookie, ...}
#  | {'create'} | {'wait', ms} ; then each retired id and reason as {'retired', id, reason}
ACQUIRE = (
    _NOW
    + _RETIRE_FUNCTION
    + """
local interval, max_uses, max_age = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local hold = tonumber(ARGV[6])
local excluded = {}
for _, proxy in ipairs(cjson.decode(ARGV[9])) do excluded[proxy] = true end
local retired = {}
local function finish(out)
  for _, r in ipairs(retired) do
    table.insert(out, 'retired'); table.insert(out, r[1]); table.insert(out, r[2])
  end
  return out
end
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[7]))
local prefer = ARGV[10]
if prefer ~= '' and redis.call('HGET', ARGV[1] .. prefer, 'state') == 'live' then
  local score = tonumber(redis.call('ZSCORE', KEYS[1], prefer) or '0')
  if score > now then return finish({'wait', tostring(math.max(1, score - now))}) end
  table.insert(ids, 1, prefer)
end
for _, id in ipairs(ids) do
  local key = ARGV[1] .. id
  local f = redis.call('HMGET', key, 'state', 'uses', 'created', 'proxy', 'identity', 'generation',
    'errors')
  local state, uses, created = f[1], tonumber(f[2] or '0'), tonumber(f[3] or '0')
  if not state then
    redis.call('ZREM', KEYS[1], id)
  elseif max_uses > 0 and uses >= max_uses then
    if retire(id, 'uses', tonumber(ARGV[8])) == 1 then table.insert(retired, {id, 'uses'}) end
  elseif max_age > 0 and now - created >= max_age then
    if retire(id, 'age', tonumber(ARGV[8])) == 1 then table.insert(retired, {id, 'age'}) end
  elseif not excluded[f[4]] then
    local kind = 'use'
    if state == 'live' then
      redis.call('ZADD', KEYS[1], now + interval, id)
    else
      -- new, or a probe/challenge whose holder did not come back within the hold
      kind = 'probe'
      redis.call('HSET', key, 'state', 'probing')
      redis.call('ZADD', KEYS[1], now + hold, id)
    end
    redis.call('HINCRBY', key, 'uses', 1)
    local out = {kind, id, f[5], f[4], f[6] or '0', f[7] or '0'}
    for _, cookie in ipairs(redis.call('HVALS', key .. ':cookies')) do table.insert(out, cookie) end
    return finish(out)
  end
end
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[5]) then return finish({'create'}) end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local wait = 0
if #first > 0 then wait = math.max(1, tonumber(first[2]) - now) end
return finish({'wait', tostring(wait)})
"""
)

# KEYS: pool, proxy counts, ledger ; ARGV: session prefix, id, identity JSON, max
# sessions, hold ms, candidate proxies (JSON list, "" = direct), ledger ttl -> the chosen
# proxy, or false when full
CREATE = (
    _NOW
    + _LEDGER_FUNCTION
    + """
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return false end
local best, fewest = nil, nil
for _, proxy in ipairs(cjson.decode(ARGV[6])) do
  local n = tonumber(redis.call('HGET', KEYS[2], proxy) or '0')
  if fewest == nil or n < fewest then best, fewest = proxy, n end
end
if best == nil then best = '' end
local key = ARGV[1] .. ARGV[2]
redis.call('HSET', key, 'state', 'probing', 'identity', ARGV[3], 'proxy', best,
  'created', now, 'uses', 1, 'errors', 0, 'generation', 0)
redis.call('HINCRBY', KEYS[2], best, 1)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[5]), ARGV[2])
ledger('created:' .. ARGV[2], '1')
return best
"""
)

# KEYS: pool, proxy counts, ledger ; ARGV: session prefix, id, outcome, interval ms, max
# errors, pause ms, retired ttl, ledger ttl -> 'retired' when the errors retired it, else
# the state
RECORD = (
    _NOW
    + _RETIRE_FUNCTION
    + """
local key = ARGV[1] .. ARGV[2]
local state = redis.call('HGET', key, 'state')
if (not state) or state == 'retired' then return 'retired' end
local outcome = ARGV[3]
if outcome == 'ok' then
  local errors = tonumber(redis.call('HGET', key, 'errors') or '0')
  if errors > 0 then redis.call('HSET', key, 'errors', errors - 1) end
  if state == 'probing' then
    redis.call('HSET', key, 'state', 'live')
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[2])
    return 'live'
  end
  return state
end
local errors = tonumber(redis.call('HINCRBY', key, 'errors', 1))
if errors >= tonumber(ARGV[5]) then
  retire(ARGV[2], 'errors', tonumber(ARGV[7]))
  return 'retired'
end
local rest = now + math.max(tonumber(ARGV[4]), tonumber(ARGV[6]))
if state == 'probing' then
  -- the probe did not prove it: another request may probe it after the pause
  redis.call('HSET', key, 'state', 'new')
  redis.call('ZADD', KEYS[1], rest, ARGV[2])
  return 'new'
end
redis.call('ZADD', KEYS[1], 'GT', rest, ARGV[2])
return state
"""
)

# KEYS: pool, proxy counts, ledger ; ARGV: session prefix, id, reason, retired ttl, ledger
# ttl -> 1 | 0
RETIRE = (
    _RETIRE_FUNCTION
    + """
return retire(ARGV[2], ARGV[3], tonumber(ARGV[4]))
"""
)

# KEYS: pool ; ARGV: session prefix, id, hold ms -> 1 the caller holds it | 0
BEGIN_CHALLENGE = (
    _NOW
    + """
local key = ARGV[1] .. ARGV[2]
local state = redis.call('HGET', key, 'state')
if (not state) or state == 'retired' then return 0 end
if state == 'challenging' then
  local until_ms = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[2]) or '0')
  if until_ms > now then return 0 end
end
redis.call('HSET', key, 'state', 'challenging')
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
return 1
"""
)

# KEYS: pool, ledger ; ARGV: session prefix, id, interval ms, cookie key/JSON pairs...,
# ledger ttl -> the new generation, 0 when the session was retired meanwhile
CHALLENGE_PASSED = (
    _NOW
    + _LEDGER_FUNCTION
    + """
local key = ARGV[1] .. ARGV[2]
local state = redis.call('HGET', key, 'state')
if (not state) or state == 'retired' then return 0 end
local jar = key .. ':cookies'
redis.call('DEL', jar)
for i = 4, #ARGV - 1, 2 do redis.call('HSET', jar, ARGV[i], ARGV[i + 1]) end
redis.call('HSET', key, 'state', 'live')
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
local generation = redis.call('HINCRBY', key, 'generation', 1)
ledger('passed:' .. ARGV[2] .. ':' .. generation, '1')
return generation
"""
)

# KEYS: the defense key ; ARGV: what was seen, ttl s -> 1 newly known | 0 known (its TTL
# renewed: a site keeps being known while it keeps answering blocks)
MARK_DEFENDED = """
local known = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', tonumber(ARGV[2]))
if known then return 1 end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
return 0
"""

# ARGV: session prefix, id, then (cookie key, JSON or '' to delete) pairs
MERGE_COOKIES = """
local key = ARGV[1] .. ARGV[2]
local state = redis.call('HGET', key, 'state')
if (not state) or state == 'retired' then return 0 end
local jar = key .. ':cookies'
for i = 3, #ARGV, 2 do
  if ARGV[i + 1] == '' then redis.call('HDEL', jar, ARGV[i])
  else redis.call('HSET', jar, ARGV[i], ARGV[i + 1]) end
end
return 1
"""
