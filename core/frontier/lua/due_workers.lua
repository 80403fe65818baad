-- The workers due by Redis' clock (the site's deadlines set), at most ``limit``.
-- KEYS: deadlines ; ARGV: limit
--#include now
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
