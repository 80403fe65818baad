"""Fetch sessions shared by every worker of a site: the model, the store's contract and the
in-memory store (``store``), the store in Redis (``redis_store``, its Lua scripts in
``lua/``). Scrapy uses them through ``crawlers.fetch.sessions``; docs/fetching.md."""
