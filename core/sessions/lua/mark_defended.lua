-- KEYS: the defense key ; ARGV: what was seen, ttl s -> 1 newly known | 0 known (its TTL
-- renewed: a site keeps being known while it keeps answering blocks)
local known = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', tonumber(ARGV[2]))
if known then return 1 end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
return 0
