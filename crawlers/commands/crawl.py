"""``scrapy crawl <site>``: Scrapy's own command, with an unknown site as one line.

Scrapy answers ``scrapy crawl nosuchsite`` with a KeyError traceback from its spider
loader once the crawler process is up (reactor installed, logging configured). Here the
name is checked while the options are processed, before any of that: one line naming the
known sites, exit status 2. A crawl the site refused as a whole (every page a block:
``crawlers.fetch.refusal``) exits with status 3 after its one ERROR line, not 0 as if it
had finished. A ``-a base_url=`` that is no http(s) URL is one line too, exit 2.
Elasticsearch refusing the crawl's credentials is one line naming the user,
the URL and the fix, exit status 2: checked before the crawl starts (nothing is fetched),
and again by the store pipeline while it runs (the crawl closes, its scraped items wait in
the spill for the next run). Everything else (``-a``, ``-s``, ``-o``, ``-O``) is Scrapy's.
"""

from __future__ import annotations

import argparse

from scrapy.commands import crawl
from scrapy.exceptions import UsageError
from scrapy.settings import BaseSettings
from scrapy.spiderloader import get_spider_loader

from core.config import HTTP_SCHEMES, OperatorError, check_url, settings_elasticsearch_kwargs
from core.es_access import AUTH_STAT, ElasticsearchAuthError, check_access
from crawlers.commands import check_site
from crawlers.fetch.refusal import REFUSAL_STAT
from crawlers.fetch.render_mode import check_chromium

REFUSED_EXIT = 3
AUTH_EXIT = 2
BASE_URL_EXAMPLE = "http://127.0.0.1:8000"


class Command(crawl.Command):
    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        if len(args) == 1:  # none or several: Scrapy's own usage errors, from run()
            assert self.settings is not None
            check_site(get_spider_loader(self.settings), args[0])
            # The site's root, else every request would fail (a traceback from __init__).
            check_url("-a base_url", opts.spargs.get("base_url"), HTTP_SCHEMES, BASE_URL_EXAMPLE)
            check_credentials(self.settings, args[0])
            check_renderer(self.settings, args[0])

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        # Scrapy's own run, keeping the crawler to read how it ended.
        if not args:
            raise UsageError
        if len(args) > 1:
            raise UsageError("running 'scrapy crawl' with more than one spider is not supported")
        assert self.crawler_process is not None
        crawler = self.crawler_process.create_crawler(args[0])
        self.crawler_process.crawl(crawler, **opts.spargs)
        self.crawler_process.start()
        if self.crawler_process.bootstrap_failed:
            self.exitcode = 1
        elif crawler.stats is not None and crawler.stats.get_value(AUTH_STAT):
            self.exitcode = AUTH_EXIT
        elif crawler.stats is not None and crawler.stats.get_value(REFUSAL_STAT):
            self.exitcode = REFUSED_EXIT


def check_credentials(settings: BaseSettings, site: str) -> None:
    """Raise OperatorError (exit 2, one line) when Elasticsearch refuses the crawl's
    credentials; unreachable is no reason to stop (the store waits and spills)."""
    if not settings.get("ELASTICSEARCH_URL"):
        return
    try:
        check_access(settings_elasticsearch_kwargs(settings))
    except ElasticsearchAuthError as exc:
        raise OperatorError(f"{site}: {exc.line}; nothing was crawled") from None


def check_renderer(settings: BaseSettings, site: str) -> None:
    """A site that renders (its profile's ``render``, or ``-s RENDER_MODE``) needs a
    Chromium: one line before the crawl starts (the render middleware checks it again
    for crawls started another way)."""
    spider_settings = settings.copy()
    get_spider_loader(settings).load(site).update_settings(spider_settings)
    check_chromium(spider_settings, site)
