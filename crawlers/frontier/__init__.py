"""The distributed frontier's Scrapy side (docs/frontier.md): the leasing scheduler and
its spider middleware (``scheduler``), its queue and dupefilter (``queue``), the lease ->
ack bookkeeping (``acks``), the end of every request whatever drops it (``fates``; local
mode's scheduler keeps the same watch, ``local``), the first contact with Redis
(``connect``), the worker extension (``worker``) and what requests carry (``meta``). The
Redis logic is ``core.frontier.queue``; the producer of a job's start entries is
``crawlers.cli.producer``."""
