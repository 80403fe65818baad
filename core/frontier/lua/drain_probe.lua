-- How long the job's digest has been unchanged, on Redis' clock (any number of pollers,
-- on any machine, agree on it whatever their own clocks say). Returns milliseconds.
-- KEYS: probe hash ; ARGV: digest, TTL of the probe (s)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local seen = redis.call('HMGET', KEYS[1], 'digest', 'since_ms')
if seen[1] ~= ARGV[1] or not seen[2] then
  redis.call('HSET', KEYS[1], 'digest', ARGV[1], 'since_ms', now)
  redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
  return 0
end
return now - tonumber(seen[2])
