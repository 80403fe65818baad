-- The job's ledger: the last KEY (its sessions hash, or any key of the site without a
-- job), the last ARGV its TTL in seconds (0: no job, nothing written).
local function ledger(field, value)
  local ttl = tonumber(ARGV[#ARGV])
  if ttl > 0 then
    redis.call('HSET', KEYS[#KEYS], field, value)
    redis.call('EXPIRE', KEYS[#KEYS], ttl)
  end
end
