-- Re-queues leases a worker holds in Redis without knowing it: granted by a lease call
-- whose reply was lost (the connection broke or timed out mid-call).
-- KEYS: priorities, leases, lease priorities, owners, start_list
-- ARGV: queue prefix, worker_leases prefix, start marker, worker, lease ids...
--#include requeue_function
local requeued = 0
for i = 5, #ARGV do
  requeued = requeued + requeue_lease(ARGV[i], ARGV[4], ARGV[3], ARGV[1])
  redis.call('SREM', ARGV[2] .. ARGV[4], ARGV[i])
end
return requeued
