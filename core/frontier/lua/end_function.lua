-- Ends leases (no requeue); needs KEYS[1..3]: leases, lease priorities, owners.
local function end_lease(id, prefix)
  local owner = redis.call('HGET', KEYS[3], id)
  if owner then redis.call('SREM', prefix .. owner, id) end
  redis.call('HDEL', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
  return redis.call('HDEL', KEYS[1], id)
end
