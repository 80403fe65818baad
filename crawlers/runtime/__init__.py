"""What every crawl component shares: the crawl's services (``services``: its Redis and
Elasticsearch clients, ledger, clock, shared components), an item's context
(``item_context``), the job of a request or item (``jobs``, ``middlewares``), the
environment mapped into settings, logging, moved component paths and crawls beside the
jobs (``sidecrawl``)."""
