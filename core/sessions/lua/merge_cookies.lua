-- ARGV: session prefix, id, then (cookie key, JSON or '' to delete) pairs
local key = ARGV[1] .. ARGV[2]
local state = redis.call('HGET', key, 'state')
if (not state) or state == 'retired' then return 0 end
local jar = key .. ':cookies'
for i = 3, #ARGV, 2 do
  if ARGV[i + 1] == '' then redis.call('HDEL', jar, ARGV[i])
  else redis.call('HSET', jar, ARGV[i], ARGV[i + 1]) end
end
return 1
