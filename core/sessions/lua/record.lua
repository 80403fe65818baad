-- KEYS: pool, proxy counts, ledger ; ARGV: session prefix, id, outcome, interval ms, max
-- errors, pause ms, retired ttl, ledger ttl -> 'retired' when the errors retired it, else
-- the state
--#include now
--#include retire_function
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
