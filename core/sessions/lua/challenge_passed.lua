-- KEYS: pool, ledger ; ARGV: session prefix, id, interval ms, cookie key/JSON pairs...,
-- ledger ttl -> the new generation, 0 when the session was retired meanwhile
--#include now
--#include ledger_function
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
