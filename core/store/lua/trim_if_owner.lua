-- KEYS: spill list, lock ; ARGV: lock token, entries handled, entries to keep...
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('LTRIM', KEYS[1], tonumber(ARGV[2]), -1)
for i = 3, #ARGV do redis.call('RPUSH', KEYS[1], ARGV[i]) end
return 1
