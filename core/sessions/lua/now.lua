-- Shared by the scripts: ``now`` is Redis' clock (epoch ms), never a worker's.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
