-- KEYS: 1 job verdicts, 2 job invalid, 3 misses, 4 removed, 5 job removed, 6 job restored,
--       7 pending, 8 item_first_seen
-- ARGV: 1 job id, 2 K, 3 count misses ('1' | '0'), 4 job started ms ('' unknown),
--       5 ttl of the job sets (s), 6.. item keys
local t = redis.call('TIME')
local now = tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local job, k, count = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1'
local started = tonumber(ARGV[4])
for i = 6, #ARGV do
  local key = ARGV[i]
  if redis.call('HEXISTS', KEYS[1], key) == 1 or redis.call('HEXISTS', KEYS[2], key) == 1 then
    -- Seen: present, whatever else the job missed.
    redis.call('HDEL', KEYS[3], key)
    if redis.call('HDEL', KEYS[4], key) == 1 then
      redis.call('SADD', KEYS[6], key)
      redis.call('EXPIRE', KEYS[6], tonumber(ARGV[5]))
      redis.call('HSET', KEYS[7], key, 'restored')
    end
  elseif count then
    local first = tonumber(redis.call('HGET', KEYS[8], key) or '')
    -- First seen after this job began (by another job): this job cannot judge it.
    if not (started and first and first >= started) then
      local raw = redis.call('HGET', KEYS[3], key)
      local n, last = 0, ''
      if raw then
        local sep = string.find(raw, ':', 1, true)
        n, last = tonumber(string.sub(raw, 1, sep - 1)), string.sub(raw, sep + 1)
      end
      if last ~= job then
        n = n + 1
        redis.call('HSET', KEYS[3], key, n .. ':' .. job)
      end
      if n >= k and redis.call('HEXISTS', KEYS[4], key) == 0 then
        redis.call('HSET', KEYS[4], key, now)
        redis.call('SADD', KEYS[5], key)
        redis.call('EXPIRE', KEYS[5], tonumber(ARGV[5]))
        redis.call('HSET', KEYS[7], key, 'removed')
      end
    end
  end
end
return 0
