-- KEYS: the probes hash ; ARGV: ref -> the summary (removed) or false
local found = redis.call('HGET', KEYS[1], ARGV[1])
if found then redis.call('HDEL', KEYS[1], ARGV[1]) end
return found
