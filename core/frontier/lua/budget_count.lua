-- KEYS: pages counter, budget hash
-- ARGV: pages to add, page budget (0: none), TTL (s)
-- Returns {pages counted, 1 when this call crossed the budget else 0, reason or ''}.
local pages = redis.call('INCRBY', KEYS[1], tonumber(ARGV[1]))
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
local limit = tonumber(ARGV[2])
local reason = redis.call('HGET', KEYS[2], 'reason')
if limit > 0 and pages >= limit then
  local first = 0
  if not reason then
    redis.call('HSET', KEYS[2], 'reason', 'pages', 'limit', limit)
    redis.call('EXPIRE', KEYS[2], tonumber(ARGV[3]))
    reason = 'pages'
    first = 1
  end
  return {pages, first, reason}
end
return {pages, 0, reason or ''}
