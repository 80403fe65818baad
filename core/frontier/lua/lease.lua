-- Leases up to n entries, highest priority first, none below ``floor`` ('' = any): the
-- highest head of another partition, so a batch never passes over better work elsewhere.
-- With one partition the site's deadlines set is in the slot (KEYS[6]): a worker that
-- leased without ever sending a heartbeat is due at once (NX: a heartbeat's deadline is
-- never shortened); with more, ``ENSURE_DEADLINE`` does it.
-- KEYS: priorities, leases, lease priorities, owners, lease_seq[, deadlines]
-- ARGV: n, worker, queue prefix, worker_leases prefix, floor
--#include now
--#include record_function
local n = tonumber(ARGV[1])
local mine = ARGV[4] .. ARGV[2]
local out = {}
while #out < 2 * n do
  local head = redis.call('ZRANGE', KEYS[1], 0, 0)
  if #head == 0 then break end
  local priority = head[1]
  if ARGV[5] ~= '' and tonumber(priority) < tonumber(ARGV[5]) then break end
  local list = ARGV[3] .. priority
  local items = redis.call('LPOP', list, n - #out / 2)
  if items then
    for _, data in ipairs(items) do record(out, mine, ARGV[2], data, priority) end
  end
  if redis.call('EXISTS', list) == 0 then redis.call('ZREM', KEYS[1], priority) end
end
if #out > 0 and KEYS[6] then redis.call('ZADD', KEYS[6], 'NX', now, ARGV[2]) end
return out
