-- The job's layout (core.recrawl.layouts): the producer's, else the worker's own (ARGV[2]).
local layout = redis.call('GET', KEYS[layout_key]) or ARGV[2]
