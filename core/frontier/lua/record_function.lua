-- Records one leased entry; needs KEYS[2..5]: leases, priorities of leases, owners, seq.
local function record(out, mine, worker, data, priority)
  local id = tostring(redis.call('INCR', KEYS[5]))
  redis.call('HSET', KEYS[2], id, data)
  redis.call('HSET', KEYS[3], id, priority)
  redis.call('HSET', KEYS[4], id, worker)
  redis.call('SADD', mine, id)
  table.insert(out, id)
  table.insert(out, data)
end
