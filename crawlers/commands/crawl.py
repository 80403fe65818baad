"""``scrapy crawl <site>``: Scrapy's own command, with an unknown site as one line.

Scrapy answers ``scrapy crawl nosuchsite`` with a KeyError traceback from its spider
loader once the crawler process is up (reactor installed, logging configured). Here the
name is checked while the options are processed, before any of that: one line naming the
known sites, exit status 2. A ``-a base_url=`` that is no http(s) URL is one line too,
exit 2. Elasticsearch refusing the crawl's credentials is one line naming the user, the
URL and the fix, exit status 2: checked before the crawl starts (nothing is fetched), and
again by the store pipeline while it runs (the crawl closes, its scraped items wait in
the spill for the next run). So are a site that renders without a Chromium and a spill
directory that cannot be written. Everything else (``-a``, ``-s``, ``-o``, ``-O``) is
Scrapy's.

How the crawl ended is its close reason (``crawlers.runtime.outcome``, ``core.jobs.outcome``):
the log's last line says it with why (``finish_reason nothing_stored: 0 of 20 items
stored: all dropped by validation (name missing)``) and the exit status follows it: 0 when
items were stored (or the site lists none), 2 ``elasticsearch_auth``, 3 ``refused`` (every page a
block), 4 ``nothing_stored``, 5 ``store_failed``, 6 ``shutdown_forced`` (a second
SIGTERM/SIGINT stopped it before it could close); 1 is Scrapy's own (the crawler could
not start).
"""

from __future__ import annotations

import argparse
import logging

from scrapy.addons import AddonManager
from scrapy.commands import crawl
from scrapy.crawler import Crawler
from scrapy.exceptions import UsageError
from scrapy.settings import BaseSettings
from scrapy.spiderloader import get_spider_loader

from core.config import HTTP_SCHEMES, OperatorError, check_url, settings_elasticsearch_kwargs
from core.es_access import AUTH_STAT, ElasticsearchAuthError, check_access
from core.jobs.outcome import (
    AUTH_FAILED,
    EXIT_CODES,
    REFUSED,
    SHUTDOWN,
    SHUTDOWN_FORCED,
    Outcome,
    judge,
)
from crawlers.commands import check_site
from crawlers.fetch.refusal import REFUSAL_STAT
from crawlers.fetch.render_mode import check_chromium
from crawlers.pipelines.store import check_spill_dir
from crawlers.runtime.outcome import OUTCOME_STAT

logger = logging.getLogger(__name__)

REFUSED_EXIT = EXIT_CODES[REFUSED]
AUTH_EXIT = EXIT_CODES[AUTH_FAILED]
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
            site_settings = spider_settings(self.settings, args[0])
            check_chromium(site_settings, args[0])
            check_spill_dir(site_settings)

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
            return
        self.exitcode = final_word(crawler)


def final_word(crawler: Crawler) -> int:
    """Log the crawl's outcome as the last line; its exit status."""
    stats = crawler.stats
    if stats is None:
        return 1
    reason, line = stats.get_value("finish_reason"), stats.get_value(OUTCOME_STAT)
    if reason is None:
        # Never closed: a second SIGTERM/SIGINT stopped it at once (Scrapy's forced stop).
        outcome = forced(stats.get_stats())
    elif not isinstance(line, str):
        # The outcome extension is off (a project's choice): the older signals.
        if stats.get_value(AUTH_STAT):
            return AUTH_EXIT
        return REFUSED_EXIT if stats.get_value(REFUSAL_STAT) else 0
    else:
        outcome = Outcome(str(reason), line)
    logger.log(logging.INFO if outcome.ok else logging.ERROR, "%s", outcome.text())
    return outcome.exit_code


def forced(stats: dict[str, object]) -> Outcome:
    """The outcome of a crawl stopped before it could close: what it had stored stands,
    what was in flight (the store's buffer) is not stored."""
    judged = judge(stats, reason=SHUTDOWN)
    return Outcome(
        SHUTDOWN_FORCED,
        f"{judged.line}; stopped before it closed (SIGTERM/SIGINT twice): items in flight "
        "were not stored",
    )


def check_credentials(settings: BaseSettings, site: str) -> None:
    """Raise OperatorError (exit 2, one line) when Elasticsearch refuses the crawl's
    credentials; unreachable is no reason to stop (the store waits and spills)."""
    if not settings.get("ELASTICSEARCH_URL"):
        return
    try:
        check_access(settings_elasticsearch_kwargs(settings))
    except ElasticsearchAuthError as exc:
        raise OperatorError(f"{site}: {exc.line}; nothing was crawled") from None


def spider_settings(settings: BaseSettings, site: str) -> BaseSettings:
    """The settings the crawl of ``site`` will run with (its spider's and profile's on
    top), for the checks made before it starts: a site that renders needs a Chromium
    (``check_chromium``), one that spills to files a writable spill directory
    (``check_spill_dir``); each is one line, exit 2 (the components check again for
    crawls started another way)."""
    site_settings = settings.copy()
    AddonManager.load_pre_crawler_settings(site_settings)  # the add-on's defaults, as Scrapy will
    get_spider_loader(settings).load(site).update_settings(site_settings)
    return site_settings
