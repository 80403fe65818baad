-- KEYS: leases, lease priorities, owners ; ARGV: worker_leases prefix, lease ids...
--#include end_function
local n = 0
for i = 2, #ARGV do n = n + end_lease(ARGV[i], ARGV[1]) end
return n
