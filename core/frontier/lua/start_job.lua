-- The job the start entries belong to becomes the site's current one; its start time
-- (the jobs sorted set's score, epoch seconds) is Redis' clock, not the producer's.
-- KEYS: current_job, jobs ; ARGV: job id
local t = redis.call('TIME')
redis.call('SET', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], tonumber(t[1]) + tonumber(t[2]) / 1000000, ARGV[1])
return t[1]
