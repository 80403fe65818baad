-- KEYS: pool, proxy counts, ledger ; ARGV: session prefix, id, reason, retired ttl, ledger
-- ttl -> 1 | 0
--#include retire_function
return retire(ARGV[2], ARGV[3], tonumber(ARGV[4]))
