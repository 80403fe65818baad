-- Takes back the ``unchanged`` of an item seen whose document turned out to be gone (its
-- page is fetched in full instead): only while that is the key's verdict in the job and
-- nothing of the key is stored in the job (a stored delivery keeps its count).
-- KEYS: job verdicts, job stats, job stored
-- ARGV: key
if redis.call('HGET', KEYS[1], ARGV[1]) == 'unchanged'
    and redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 0 then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('HINCRBY', KEYS[2], 'items/unchanged', -1)
  return 1
end
return 0
