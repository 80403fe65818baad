-- Empties one partition's queue and start list (a job's budget ended it); leases stay
-- to be acked. KEYS: priorities, start_list ; ARGV: queue prefix
local n = redis.call('LLEN', KEYS[2])
for _, priority in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  n = n + redis.call('LLEN', ARGV[1] .. priority)
  redis.call('DEL', ARGV[1] .. priority)
end
redis.call('DEL', KEYS[1], KEYS[2])
return n
