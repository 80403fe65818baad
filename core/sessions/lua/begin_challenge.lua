-- KEYS: pool ; ARGV: session prefix, id, hold ms -> 1 the caller holds it | 0
--#include now
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
