-- One push: the dedup check and the push are atomic, so two workers discovering the same
-- URL at once queue it exactly once. If the entry continues a lease of this partition (a
-- retry/redirect), that lease ends in the same step, queued or not. The seen-set is a
-- hash per fingerprint bucket (``FrontierKeys.seen``): field = the digest's other bytes.
-- Needs KEYS[1..4]: priorities, leases, lease priorities, owners.
-- push(seen key, dedup '1'/'0', field, priority, data, lease id ('' for none), seen TTL,
-- queue prefix, worker_leases prefix) -> 1 queued, 0 seen before
local function push(seen, dedup, field, priority, data, lease, ttl, qprefix, lprefix)
  local function release_lease()
    if lease ~= '' then
      local owner = redis.call('HGET', KEYS[4], lease)
      if owner then redis.call('SREM', lprefix .. owner, lease) end
      redis.call('HDEL', KEYS[2], lease)
      redis.call('HDEL', KEYS[3], lease)
      redis.call('HDEL', KEYS[4], lease)
    end
  end
  if dedup == '1' then
    local added = redis.call('HSETNX', seen, field, '')
    redis.call('EXPIRE', seen, ttl)
    if added == 0 then
      release_lease()
      return 0
    end
  end
  redis.call('RPUSH', qprefix .. priority, data)
  redis.call('ZADD', KEYS[1], -tonumber(priority), priority)
  release_lease()
  return 1
end
