"""The distributed frontier's Scrapy side (docs/frontier.md): the leasing scheduler, its
queue and dupefilter (``scheduler``, ``queue``), the lease -> ack bookkeeping (``acks``),
the first contact with Redis (``connect``), the worker extension (``worker``) and the
producer of a job's start entries (``producer``). The Redis logic is ``core.frontier``."""
