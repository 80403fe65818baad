"""Re-crawls (docs/recrawl.md): a response's re-crawl context and ``ItemSeen``
(``context``), the listing-card gate (``cards``) and the pipelines that record cards and
page validators once items are durable (``pipelines``). Conditional GETs are
``crawlers.fetch.conditional``; the Redis side is ``core.recrawl.cards``."""
