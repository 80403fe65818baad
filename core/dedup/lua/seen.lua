-- An item seen unchanged without its page being parsed (a 304, an unchanged listing
-- card: ``ChangeState.seen``). Nothing about the site's state changes; the job's
-- bookkeeping is _CLASSIFY's for an ``unchanged`` verdict of a complete item.
-- KEYS: as _CLASSIFY
-- ARGV: key, now (epoch ms; empty: Redis' TIME), ttl of the job keys (s)
-- Returns {'unknown'} when the key has no state, else {verdict, first, changed, now, hash}.
local key, now = ARGV[1], ARGV[2]
local hash = redis.call('HGET', KEYS[1], key)
if not hash then
  -- State gone (or never there): the caller fetches the page in full; nothing counted.
  return {'unknown'}
end
if now == '' then
  local t = redis.call('TIME')
  now = tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
end
-- Only complete items get validators or card hashes recorded: the stored item is whole.
redis.call('HDEL', KEYS[8], key)
redis.call('HDEL', KEYS[9], key)
local verdict = 'unchanged'
local prev = redis.call('HGET', KEYS[4], key)
if prev then
  -- Within a job a key keeps its strongest verdict: any is at least 'unchanged'.
  verdict = prev
else
  redis.call('HINCRBY', KEYS[7], 'items/unchanged', 1)
  redis.call('HSET', KEYS[4], key, verdict)
  for i = 4, 7 do redis.call('EXPIRE', KEYS[i], tonumber(ARGV[3])) end
end
local first = redis.call('HGET', KEYS[2], key)
if not first then
  first = now
  redis.call('HSET', KEYS[2], key, now)
end
local changed = redis.call('HGET', KEYS[3], key) or first
return {verdict, first, changed, now, hash}
