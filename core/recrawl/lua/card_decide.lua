-- KEYS: job_seq, job_seq_of, card_state, item_hashes, job_layout, job_unparsed
-- ARGV: job id, worker's layout, detail callback, item keys...
-- -> {now ms, run, layout, stopped (0/1), record 1 (or false), known 1 (0/1), ...}
--#include card_run
local layout_key = 5
--#include card_layout
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {now, run, layout, redis.call('SISMEMBER', KEYS[6], ARGV[3])}
for i = 4, #ARGV do
  table.insert(out, redis.call('HGET', KEYS[3], ARGV[i]) or false)
  table.insert(out, redis.call('HEXISTS', KEYS[4], ARGV[i]))
end
return out
