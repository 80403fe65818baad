-- Forget a pending entry only if it still says what was applied (a later job may have
-- turned a removal into a restoration meanwhile).
-- KEYS: 1 pending ; ARGV: key, action, key, action, ...
local gone = 0
for i = 1, #ARGV, 2 do
  if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[i + 1] then
    gone = gone + redis.call('HDEL', KEYS[1], ARGV[i])
  end
end
return gone
