-- KEYS: the site's render-choice hash ; ARGV: callback, same (1|0), sample, page ('' none)
-- -> mode, agree, disagree, probes, checked (epoch s)
local h, cb, same, sample = KEYS[1], ARGV[1], ARGV[2] == '1', tonumber(ARGV[3])
local mode = redis.call('HGET', h, cb .. ':mode') or 'learning'
local t = redis.call('TIME')
if mode == 'learning' and same and ARGV[4] ~= '' then
  redis.call('HSET', h, cb .. ':agreed:' .. ARGV[4], t[1])
end
local agree = tonumber(redis.call('HGET', h, cb .. ':agree') or '0')
local disagree = tonumber(redis.call('HGET', h, cb .. ':disagree') or '0')
local probes = tonumber(redis.call('HGET', h, cb .. ':probes') or '0')
if mode == 'learning' then
  if not same then mode, agree, disagree = 'render', 0, 0
  elseif agree + 1 >= sample then mode, agree, disagree = 'plain', 0, 0
  else agree = agree + 1 end
elseif mode == 'plain' then
  if not same then mode, agree, disagree = 'render', 0, 0 else agree = agree + 1 end
else
  if same then
    if agree + 1 >= sample then mode, agree, disagree = 'plain', 0, 0 else agree = agree + 1 end
  else agree, disagree = 0, disagree + 1 end
end
if mode ~= 'learning' then probes = 0 end
redis.call('HSET', h, cb .. ':mode', mode, cb .. ':agree', agree, cb .. ':disagree', disagree,
  cb .. ':probes', probes, cb .. ':checked', t[1], cb .. ':recheck_at', 0)
return {mode, agree, disagree, probes, t[1]}
