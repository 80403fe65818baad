-- KEYS: start_list, leases, lease priorities, owners, lease_seq[, deadlines]
-- ARGV: n, worker, marker, worker_leases prefix
--#include now
--#include record_function
local mine = ARGV[4] .. ARGV[2]
local out = {}
for i = 1, tonumber(ARGV[1]) do
  local data = redis.call('LPOP', KEYS[1])
  if not data then break end
  record(out, mine, ARGV[2], data, ARGV[3])
end
if #out > 0 and KEYS[6] then redis.call('ZADD', KEYS[6], 'NX', now, ARGV[2]) end
return out
