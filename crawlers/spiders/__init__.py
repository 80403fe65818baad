"""Spiders, one per site: ``scrapy crawl <name>`` from the repository root."""
