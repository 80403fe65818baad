-- Puts one lease's entry back where it came from (the front of its priority's list: it
-- was due already; or the start list) and deletes the lease; an id not owned by
-- ``worker`` (acked, or re-queued already) is left alone. Returns 1 when an entry went
-- back, else 0. Needs KEYS[1..5]: priorities, leases, lease priorities, owners, start_list.
local function requeue_lease(id, worker, marker, qprefix)
  if redis.call('HGET', KEYS[4], id) ~= worker then return 0 end
  local data = redis.call('HGET', KEYS[2], id)
  local priority = redis.call('HGET', KEYS[3], id)
  redis.call('HDEL', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
  redis.call('HDEL', KEYS[4], id)
  if not data then return 0 end
  if priority == marker then
    redis.call('RPUSH', KEYS[5], data)
  else
    redis.call('LPUSH', qprefix .. priority, data)
    redis.call('ZADD', KEYS[1], -tonumber(priority), priority)
  end
  return 1
end
