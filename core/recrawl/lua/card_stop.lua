-- The job stops skipping a callback's pages: the pages it skipped so far (key, page, ...)
-- go to the first caller (``token``) to fetch, and to it again if it retries a call whose
-- reply was lost; another worker stopping it too gets none.
-- KEYS: job_unparsed, job_skipped, job_skipped taken ; ARGV: callback, ttl, token
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
local owner = redis.call('HGET', KEYS[3], '__taken_by')
if not owner then
  if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('RENAME', KEYS[2], KEYS[3]) end
  redis.call('HSET', KEYS[3], '__taken_by', ARGV[3])
  redis.call('EXPIRE', KEYS[3], ARGV[2])
  owner = ARGV[3]
end
if owner ~= ARGV[3] then return {} end
return redis.call('HGETALL', KEYS[3])
