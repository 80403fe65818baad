-- Several pushes into one partition in one round trip, each as above, in order.
-- KEYS: priorities, leases, lease priorities, owners, then one seen key per entry
-- ARGV: seen TTL, queue prefix, worker_leases prefix, then per entry:
--       dedup, field, priority, data, lease id
--#include push_function
local out = {}
for i = 0, #KEYS - 5 do
  local a = 4 + i * 5
  out[i + 1] = push(KEYS[5 + i], ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3],
    ARGV[a + 4], ARGV[1], ARGV[2], ARGV[3])
end
return out
