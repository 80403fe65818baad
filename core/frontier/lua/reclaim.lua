-- Re-queues at most ``batch`` leases of the given workers in one partition, popped from
-- their lease sets: its cost does not depend on the leases live workers hold. Returns
-- {re-queued, workers that still hold leases in this partition...}.
-- KEYS: priorities, leases, lease priorities, owners, start_list
-- ARGV: queue prefix, worker_leases prefix, start marker, batch, workers...
--#include requeue_function
local budget = tonumber(ARGV[4])
local requeued = 0
local out = {0}
for i = 5, #ARGV do
  local worker = ARGV[i]
  local set = ARGV[2] .. worker
  if budget > 0 then
    local ids = redis.call('SPOP', set, budget)
    budget = budget - #ids
    for _, id in ipairs(ids) do
      requeued = requeued + requeue_lease(id, worker, ARGV[3], ARGV[1])
    end
  end
  if redis.call('EXISTS', set) == 1 then table.insert(out, worker) end
end
out[1] = requeued
return out
