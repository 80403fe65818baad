"""What every crawl component shares: the crawl's services (``services``: its Redis and
Elasticsearch clients, ledger, clock, card gate), the environment mapped into settings,
the job tag middleware, logging, the local-mode summary and crawls beside the jobs."""
