"""The request frontier in Redis: the partitioned queue and its leases (``queue``), its
layout in Redis (``layout``), the worker registry (``workers``), a job's budget
(``budget``), the drain check (``drain``); their Lua scripts in ``lua/``. Scrapy plugs it in
through ``crawlers.frontier``; docs/frontier.md."""
