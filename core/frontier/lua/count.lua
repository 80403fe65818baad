-- Entries queued in one partition (every priority's list and the start list).
-- KEYS: priorities, start_list ; ARGV: queue prefix
local n = redis.call('LLEN', KEYS[2])
for _, priority in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  n = n + redis.call('LLEN', ARGV[1] .. priority)
end
return n
