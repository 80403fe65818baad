-- KEYS: the hash ; ARGV: callback, sample, stale ms -> 1 started | 0 enough under way
local mode = redis.call('HGET', KEYS[1], ARGV[1] .. ':mode') or 'learning'
if mode ~= 'learning' then return 1 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local probes = tonumber(redis.call('HGET', KEYS[1], ARGV[1] .. ':probes') or '0')
local since = tonumber(redis.call('HGET', KEYS[1], ARGV[1] .. ':probes_at') or '0')
if probes >= tonumber(ARGV[2]) then
  if now - since < tonumber(ARGV[3]) then return 0 end
  probes = 0
end
redis.call('HSET', KEYS[1], ARGV[1] .. ':probes', probes + 1, ARGV[1] .. ':probes_at', now)
return 1
