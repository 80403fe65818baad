-- KEYS: any key of the site (routes the call to the master holding the site's slot)
return redis.call('TIME')