"""Scrapy's HTTP cache for local debugging, minus the block pages.

``scrapy crawl <site> -s HTTPCACHE_ENABLED=1`` replays pages from ``.scrapy/httpcache``
while a spider is being fixed. A cached CAPTCHA would be replayed on every retry (and
on every later run), so block pages are never stored. Off in production (the default).
"""

from __future__ import annotations

from scrapy.extensions.httpcache import DummyPolicy
from scrapy.http import Request, Response
from scrapy.settings import BaseSettings

from core.fetch.blocks import classify
from crawlers.fetch.classify import rules_from_settings


class BlockAwareCachePolicy(DummyPolicy):
    def __init__(self, settings: BaseSettings) -> None:
        super().__init__(settings)
        self.rules = rules_from_settings(settings)

    def should_cache_response(self, response: Response, request: Request) -> bool:
        if not super().should_cache_response(response, request):
            return False
        verdict = classify(response.status, response.headers, response.body, rules=self.rules)
        return not verdict.is_block
