-- A listing page's skips, kept per job and detail callback (item key -> the page to fetch
-- should the job stop skipping), unless the job stopped skipping that callback meanwhile:
-- then nothing is kept and the caller fetches them all.
-- KEYS: job_unparsed, job_skipped ; ARGV: callback, ttl, key 1, page 1, key 2, page 2, ...
-- -> 1 (skipped) or 0 (stopped: fetch)
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 0 end
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
if #ARGV > 2 then redis.call('EXPIRE', KEYS[2], ARGV[2]) end
return 1
