-- KEYS: the hash ; ARGV: callback, after s, stale s -> 1 this caller checks | 0
if redis.call('HGET', KEYS[1], ARGV[1] .. ':mode') ~= 'plain' then return 0 end
local now = tonumber(redis.call('TIME')[1])
local checked = tonumber(redis.call('HGET', KEYS[1], ARGV[1] .. ':checked') or '0')
local claimed = tonumber(redis.call('HGET', KEYS[1], ARGV[1] .. ':recheck_at') or '0')
if now - checked < tonumber(ARGV[2]) or now - claimed < tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1] .. ':recheck_at', now)
return 1
