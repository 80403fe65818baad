"""Item pipelines: validate -> dedup -> store (priorities 100, 200, 300 in settings).

* ``validate.ValidationPipeline``: the item's schema (``crawlers.items``); invalid items
  are dropped with a counted reason per field. Always on.
* ``dedup.DedupPipeline``: new / changed / unchanged, decided once, against the site's
  state in Redis (``REDIS_URL``) or, without Redis, the stored documents
  (``ELASTICSEARCH_URL``); the job's new and changed keys are kept for the LLM step.
* ``store.StorePipeline``: bulk writes of dedup's verdicts into Elasticsearch, durable
  before the item is released (so before the frontier acks its request). Needs
  ``ELASTICSEARCH_URL``.

Each reads ``crawler.settings`` only. A pipeline whose service is not configured is off
(NotConfigured), so ``scrapy crawl <site> -O items.jsonl`` works with no services at all.
See docs/pipelines.md.
"""
