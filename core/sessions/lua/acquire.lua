-- KEYS: pool, proxy counts, ledger ; ARGV: session prefix, interval ms, max uses, max age
-- ms, max sessions, hold ms, scan limit, retired ttl, excluded proxies (JSON list), the
-- preferred session ('' none), ledger ttl
-- -> {'use'|'probe', id, identity, proxy, generation, cookie, cookie, ...}
--  | {'create'} | {'wait', ms} ; then each retired id and reason as {'retired', id, reason}
--#include now
--#include retire_function
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
