-- Dead workers whose leases are all re-queued leave the deadlines set, unless a
-- heartbeat revived them meanwhile. KEYS: deadlines ; ARGV: workers
--#include now
local n = 0
for _, worker in ipairs(ARGV) do
  local deadline = redis.call('ZSCORE', KEYS[1], worker)
  if deadline and tonumber(deadline) <= now then
    n = n + redis.call('ZREM', KEYS[1], worker)
  end
end
return n
