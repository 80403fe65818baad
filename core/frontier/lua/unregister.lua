-- KEYS: heartbeat key, workers set, deadlines ; ARGV: worker id
-- The deadline becomes "due": leases the worker still holds are reclaimed at the next
-- reclaim (and the entry removed there once it holds none).
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], 'XX', 0, ARGV[1])
return 1
