"""The Scrapy project: settings, items, spiders, pipelines, middlewares, extensions."""
