-- KEYS: the site's history values, the job's old values
-- ARGV: item key, its new values (compact JSON), ttl of the job key (s)
-- Returns the key's values before the job ('' when none were known).
local key = ARGV[1]
local old = redis.call('HGET', KEYS[2], key)
if not old then
  old = redis.call('HGET', KEYS[1], key) or ''
  redis.call('HSET', KEYS[2], key, old)
  redis.call('EXPIRE', KEYS[2], tonumber(ARGV[3]))
end
redis.call('HSET', KEYS[1], key, ARGV[2])
return old
