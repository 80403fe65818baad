"""Operators' commands over a site's crawl state, beside ``scrapy crawl``: the producer of
a job's start entries (``python -m crawlers.cli.producer``) and the spill drain
(``python -m crawlers.cli.drain``)."""
