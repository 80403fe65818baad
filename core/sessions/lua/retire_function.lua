-- Retire one session: out of the pool, its proxy's count down, its record kept a day, the
-- ledger told. Needs KEYS[1] pool, KEYS[2] per-proxy counts; ARGV[1] the session prefix.
--#include ledger_function
local function retire(id, reason, ttl)
  local key = ARGV[1] .. id
  local state = redis.call('HGET', key, 'state')
  redis.call('ZREM', KEYS[1], id)
  if (not state) or state == 'retired' then return 0 end
  local proxy = redis.call('HGET', key, 'proxy')
  if proxy then
    if tonumber(redis.call('HINCRBY', KEYS[2], proxy, -1)) <= 0 then
      redis.call('HDEL', KEYS[2], proxy)
    end
  end
  redis.call('HSET', key, 'state', 'retired', 'reason', reason)
  redis.call('EXPIRE', key, ttl)
  redis.call('EXPIRE', key .. ':cookies', ttl)
  ledger('retired:' .. id, reason)
  return 1
end
