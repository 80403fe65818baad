-- KEYS: pool, proxy counts, ledger ; ARGV: session prefix, id, identity JSON, max
-- sessions, hold ms, candidate proxies (JSON list, "" = direct), ledger ttl -> the chosen
-- proxy, or false when full
--#include now
--#include ledger_function
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
