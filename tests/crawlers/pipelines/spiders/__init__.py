"""Spiders for pipeline tests (``scrapy crawl ... -s SPIDER_MODULES=<this package>``)."""
