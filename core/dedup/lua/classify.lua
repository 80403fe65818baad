-- KEYS: hashes, first_seen, last_changed, job verdicts, job new, job changed, job stats,
--       job incomplete, job invalid
-- ARGV: key, content hash, now (epoch ms; empty: Redis' TIME), ttl of the job keys (s),
--       parts the item lacks (comma-separated; empty: complete)
local key, hash, now = ARGV[1], ARGV[2], ARGV[3]
if now == '' then
  -- The shared clock: Redis' own, never the worker's (ordering and timestamps decide).
  local t = redis.call('TIME')
  now = tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
end
-- The job's ledger (core.figures.ledger): the latest delivery of a key says whether it is
-- complete, and a key that reached dedup is not an invalid item of the job.
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[8], key, ARGV[5])
  redis.call('EXPIRE', KEYS[8], tonumber(ARGV[4]))
else
  redis.call('HDEL', KEYS[8], key)
end
redis.call('HDEL', KEYS[9], key)
local old = redis.call('HGET', KEYS[1], key)
local verdict
if not old then
  verdict = 'new'
  redis.call('HSET', KEYS[2], key, now)
  redis.call('HSET', KEYS[3], key, now)
elseif old ~= hash then
  verdict = 'changed'
  redis.call('HSET', KEYS[3], key, now)
else
  verdict = 'unchanged'
end
if old ~= hash then
  redis.call('HSET', KEYS[1], key, hash)
end
-- Within a job a key keeps its strongest verdict (new > changed > unchanged).
local prev = redis.call('HGET', KEYS[4], key)
if prev == 'new' or (prev == 'changed' and verdict == 'unchanged') then
  verdict = prev
end
if prev ~= verdict then
  if prev then
    redis.call('HINCRBY', KEYS[7], 'items/' .. prev, -1)
    if prev == 'changed' then redis.call('SREM', KEYS[6], key) end
  end
  redis.call('HINCRBY', KEYS[7], 'items/' .. verdict, 1)
  if verdict == 'new' then redis.call('SADD', KEYS[5], key) end
  if verdict == 'changed' then redis.call('SADD', KEYS[6], key) end
  redis.call('HSET', KEYS[4], key, verdict)
  for i = 4, 7 do redis.call('EXPIRE', KEYS[i], tonumber(ARGV[4])) end
end
local first = redis.call('HGET', KEYS[2], key)
if not first then
  -- state written before first_seen was tracked: start it now
  first = now
  redis.call('HSET', KEYS[2], key, now)
end
local changed = redis.call('HGET', KEYS[3], key) or first
return {verdict, first, changed, now}
