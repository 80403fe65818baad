-- The site's deadlines set, for a worker that leased in a partition outside its slot.
-- KEYS: deadlines ; ARGV: worker
--#include now
return redis.call('ZADD', KEYS[1], 'NX', now, ARGV[1])
