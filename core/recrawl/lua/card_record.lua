-- Idempotent per (key, job): a record of the same run, hash and layout is kept as it is
-- (a re-delivered item does not move its time), and a later run's record is never
-- replaced by an earlier run's (a late re-delivery of an old job). A record without a
-- layout (made before layouts were kept) matches no pattern: it is replaced.
-- KEYS: job_seq, job_seq_of, card_state, job_layout
-- ARGV: job id, worker's layout, key 1, card hash 1, key 2, card hash 2, ...
-- -> the number of records written
--#include card_run
local layout_key = 4
--#include card_layout
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local written = 0
for i = 3, #ARGV, 2 do
  local old = redis.call('HGET', KEYS[3], ARGV[i])
  local keep = false
  if old then
    local hash, _, old_run, old_layout = string.match(old, '^(.*):(%d+):(%d+):L(%w*)$')
    old_run = tonumber(old_run)
    if old_run and (old_run > run
        or (old_run == run and hash == ARGV[i + 1] and old_layout == layout)) then
      keep = true
    end
  end
  if not keep then
    redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1] .. ':' .. now .. ':' .. run .. ':L' .. layout)
    written = written + 1
  end
end
return written
