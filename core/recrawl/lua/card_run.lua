-- The run of a job: assigned once per job id (every worker of the job gets the same).
-- Needs KEYS[1] job_seq, KEYS[2] job_seq_of and ARGV[1] job id; sets ``run``.
local run = redis.call('HGET', KEYS[2], ARGV[1])
if not run then
  run = redis.call('INCR', KEYS[1])
  redis.call('HSET', KEYS[2], ARGV[1], run)
end
run = tonumber(run)
