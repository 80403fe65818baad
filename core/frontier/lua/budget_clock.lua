-- KEYS: budget hash, jobs (zset: job id -> start)
-- ARGV: job id, wall-time budget (s), TTL (s)
-- Returns {seconds since the job started, 1 when this call ended it else 0, reason or ''}.
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local started = redis.call('ZSCORE', KEYS[2], ARGV[1])
local reason = redis.call('HGET', KEYS[1], 'reason')
if not started then return {'0', 0, reason or ''} end
local elapsed = now - tonumber(started)
local limit = tonumber(ARGV[2])
if limit > 0 and elapsed >= limit then
  local first = 0
  if not reason then
    redis.call('HSET', KEYS[1], 'reason', 'time', 'limit', limit)
    redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
    reason = 'time'
    first = 1
  end
  return {tostring(elapsed), first, reason}
end
return {tostring(elapsed), 0, reason or ''}
