"""The scraping platform as a Scrapy add-on: ``ADDONS = {"crawlers.addon.ScrapingPlatform": 0}``.

Installs, at 'addon' priority (the project's settings.py, a spider's ``custom_settings`` and
``-s`` still win): the defaults of ``crawlers.defaults``, the fetch downloader middlewares
and download handler, the spider middlewares, the item pipelines, the extensions, and the
scheduler: ``LocalScheduler`` without ``REDIS_URL``, the distributed frontier with it.
A component the project already lists (even as ``None``) is left as it has it.

Reads: the final settings (``REDIS_URL``, ``ELASTICSEARCH_URL``, ``FETCH_TLS_VERIFY``, ...);
checks ``crawlers.compat`` and the platform's settings at start (``ConfigurationError``).
The component table and orders: docs/configuration.md "The add-on: the platform in any
Scrapy project".
"""

from __future__ import annotations

import logging
from typing import Any

from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry
from scrapy import signals
from scrapy.addons import AddonManager
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings, Settings
from scrapy.spiderloader import get_spider_loader
from scrapy.utils.misc import load_object
from scrapy.utils.project import get_project_settings

from core.config import (
    ConfigurationError,
    check_elasticsearch_url,
    check_http_url,
    check_proxy_url,
    check_redis_url,
    read_proxy_file,
    redacted,
)
from core.redis_client import SOCKET_OPTIONS
from crawlers import defaults
from crawlers.compat import check_private_api
from crawlers.fetch.identity import check_identity
from crawlers.fetch.proxies import configured_proxies
from crawlers.runtime.logs import quiet_client_loggers

logger = logging.getLogger(__name__)

PRIORITY = "addon"

# Component priority dictionaries: path -> order (None: Scrapy's own, switched off).
COMPONENTS: dict[str, dict[str, int | None]] = {
    "DOWNLOADER_MIDDLEWARES": {
        # Replaced by subclasses: retries back off, change proxy and drop block pages;
        # abandoned redirect loops are counted.
        "scrapy.downloadermiddlewares.retry.RetryMiddleware": None,
        "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
        "crawlers.fetch.retry.CountingRedirectMiddleware": 600,
        # Responses pass high -> low: decompressed (590) -> ban verdict (588) -> proxy
        # marked (587) -> the session's fate, a challenge passed in the browser (586) ->
        # counted, retried or dropped (585) -> meta refresh (580).
        "crawlers.fetch.proxies.BanDetection": 588,
        "crawlers.fetch.proxies.RotatingProxies": 587,
        # Requests: after the retry layer's wait (585), the session chosen sets the proxy
        # before rotation (587) would pick one. Off unless SESSIONS_ENABLED.
        "crawlers.fetch.sessions.SessionMiddleware": 586,
        "crawlers.fetch.retry.BlockRetryMiddleware": 585,
        "crawlers.fetch.encoding.EncodingRepairMiddleware": 584,
        # Requests pass low -> high: proxy chosen (587) -> render flag (740) -> auth (750)
        # -> the identity's headers (760).
        "crawlers.fetch.render_mode.RenderMiddleware": 740,
        # Replaced: the identity's User-Agent (or USER_AGENT with FETCH_IDENTITY=crawler),
        # with every other header of a plain request in a browser's order. After every
        # middleware that adds one (cookies 700, validators 745, proxy credentials 750).
        "scrapy.downloadermiddlewares.useragent.UserAgentMiddleware": None,
        "crawlers.fetch.identity.IdentityMiddleware": 760,
        # After the render flag (a rendered request never gets validators), before the
        # HTTP cache (900): it sees a 304 first and hands it on as an ok answer to the
        # redirect (600), ban (588) and retry (585) layers. Off without [recrawl].
        "crawlers.fetch.conditional.ConditionalRequests": 745,
    },
    "SPIDER_MIDDLEWARES": {
        # The outermost spider middleware: sees every response first and exactly the output
        # that reaches the scraper, to ack frontier leases (NotConfigured without it).
        "crawlers.frontier.scheduler.LeaseAckMiddleware": 0,
        # Early in input order, so every request/item a callback yields passes through it.
        "crawlers.runtime.middlewares.JobTagMiddleware": 50,
        # A response's re-crawl context (item key, card hash, validators) goes on to
        # the requests and items its callback yields (crawlers.recrawl.context).
        "crawlers.recrawl.context.RecrawlContextMiddleware": 60,
        # An item page the spider could not parse stops the job's skips of its kind
        # (listing cards, 304s) and fetches the pages it skipped (crawlers.recrawl.unparsed).
        "crawlers.recrawl.unparsed.UnparsedPagesMiddleware": 65,
        # Next to the spider: sees a callback's own output, to compare a rendered sample
        # with its plain probe (RENDER_MODE=auto; NotConfigured otherwise).
        "crawlers.fetch.adaptive.AdaptiveRenderMiddleware": 70,
        # Budgets (crawlers.limits.budget); a callback's output passes high -> low: the depth
        # limit, Scrapy's, counted (900) -> URL-shape chains and the job's end (850) ->
        # the links of one page capped and handed on in batches (800).
        "crawlers.limits.budget.LinkCap": 800,
        "crawlers.limits.budget.ChainBudget": 850,
        "scrapy.spidermiddlewares.depth.DepthMiddleware": None,
        "crawlers.limits.budget.DepthBudget": 900,
    },
    "ITEM_PIPELINES": {
        "crawlers.pipelines.validate.ValidationPipeline": 100,
        "crawlers.pipelines.dedup.DedupPipeline": 200,
        # Change documents of new/changed items, handed to the store (core.recrawl.history).
        "crawlers.pipelines.history.HistoryPipeline": 250,
        "crawlers.pipelines.store.StorePipeline": 300,
        "crawlers.recrawl.cards.CardsPipeline": 390,  # listing cards, once items are durable
        # After the store: an item reaching it is durable, its page's record may be kept.
        "crawlers.pipelines.recrawl.RecrawlRecordPipeline": 400,
    },
    "EXTENSIONS": {
        # One INFO line naming what local mode leaves out (no services configured).
        "crawlers.addon.LocalModeSummary": 0,
        # A site that refuses every page: one ERROR line, closed early, exit status 3.
        "crawlers.fetch.refusal.RefusalCheck": 10,
        # The job's page and wall-time budgets (off when both are 0).
        "crawlers.limits.budget.JobBudgetCheck": 20,
        # Log lines cut at LOG_MAX_LINE_CHARS (crawlers.limits.bounded).
        "crawlers.limits.bounded.LogLineCap": 1,
        # Lines repeated but for their URLs said once with a count (crawlers.limits.log_repeats).
        "crawlers.limits.log_repeats.LogRepeats": 2,
        # Response header lines as long as a browser reads (crawlers.fetch.header_limit).
        "crawlers.fetch.header_limit.HeaderLimit": 3,
        # The close reason that says what the crawl got (finish_reason, the last line, the
        # exit status): after the refusal check (10), before the frontier worker's last
        # stats push (100).
        "crawlers.runtime.outcome.CrawlOutcome": 50,
    },
}

DOWNLOAD_HANDLERS = {
    "http": "crawlers.fetch.rendering.ResilientPlaywrightHandler",
    "https": "crawlers.fetch.rendering.ResilientPlaywrightHandler",
}

# The distributed frontier: scrapy-redis' scheduler with our lease -> ack queue.
FRONTIER: dict[str, Any] = {
    "SCHEDULER": "crawlers.frontier.scheduler.LeasingScheduler",
    "SCHEDULER_QUEUE_CLASS": "crawlers.frontier.queue.LeasedQueue",
    "DUPEFILTER_CLASS": "crawlers.frontier.queue.JobDupeFilter",
    # The frontier belongs to the site, not to one worker: never flushed at close.
    "SCHEDULER_PERSIST": True,
}
FRONTIER_EXTENSIONS: dict[str, int | None] = {"crawlers.frontier.worker.FrontierWorker": 100}
# Without REDIS_URL: Scrapy's scheduler, with the frontier's request fates.
LOCAL_SCHEDULER = "crawlers.frontier.local.LocalScheduler"


def redis_params() -> dict[str, Any]:
    """REDIS_PARAMS of the frontier's client (fresh: Retry objects hold state)."""
    return {
        # Short timeouts (core.redis_client) + a few quick retries: longer outages are
        # ridden out by the scheduler's local buffers.
        **SOCKET_OPTIONS,
        "retry": Retry(ExponentialBackoff(cap=1.0, base=0.05), retries=3),
        "retry_on_error": [RedisConnectionError, RedisTimeoutError],
    }


class ScrapingPlatform:
    """The Scrapy add-on (see the module docstring for what it installs)."""

    @classmethod
    def update_pre_crawler_settings(cls, settings: BaseSettings) -> None:
        # Scrapy configures logging and builds the spider before add-ons' update_settings
        # run: installed here as well, LOG_LEVEL holds from the first line, a spider's
        # from_crawler sees the frontier, and a malformed project or command-line setting
        # stops the process before anything starts. Scrapy configures logging right after:
        # the service clients' loggers are quiet from the first line.
        install(settings)
        quiet_client_loggers(settings)

    def update_settings(self, settings: BaseSettings) -> None:
        check_private_api()
        install(settings)  # again: the final settings, a spider's and profile's included
        # Only for a crawl (not every CLI reading the project's settings): the browser
        # identity needs the installed Chromium's version, or BROWSER_VERSION.
        check_identity(settings)
        redis_url = settings.get("REDIS_URL")
        if redis_url:
            logger.info("scraping platform: frontier on %s", redacted(str(redis_url)))
        else:
            logger.info("scraping platform: no REDIS_URL, Scrapy's own scheduler")


def project_settings(settings: Settings | None = None) -> Settings:
    """The settings a crawl of this project starts from, for code that reads crawl
    settings outside a crawl (CLIs, the drain step): the project's settings (environment
    mapped in) with its add-ons applied, as Scrapy applies them before building a crawler.
    """
    settings = settings if settings is not None else get_project_settings()
    AddonManager.load_pre_crawler_settings(settings)
    return settings


def site_settings(site: str) -> Settings:
    """The settings a crawl of ``site`` runs with (its spider's custom settings and its
    profile's ``[settings]`` over the project's), for code outside the crawl that must
    know them (the flow's report)."""
    settings = project_settings()
    spidercls = get_spider_loader(settings).load(site)
    spidercls.update_settings(settings)
    return settings


def drain_window(settings: BaseSettings | None = None) -> float:
    """Seconds a job's counters must stay still before it counts as drained: past the
    store's flush window (twice) and a workers' stats push, plus a second of margin. The
    flow's drain step and the soak benchmark wait the same way."""
    s = settings if settings is not None else project_settings()
    return 2 * s.getfloat("STORE_FLUSH_INTERVAL") + s.getfloat("FRONTIER_STATS_INTERVAL") + 1.0


def install(settings: BaseSettings) -> None:
    """Defaults, components and (with REDIS_URL) the frontier, at 'addon' priority.

    Idempotent: Scrapy may call it before the crawler exists and again on its settings.
    """
    settings.setmodule(defaults, priority=PRIORITY)
    for name, components in COMPONENTS.items():
        setdefault_components(settings, name, components)
    if project_level(settings, "DOWNLOAD_HANDLERS"):
        handlers = settings.getdict("DOWNLOAD_HANDLERS")
        for scheme, path in DOWNLOAD_HANDLERS.items():
            handlers.setdefault(scheme, path)  # a scheme the project maps keeps its handler
        settings.set("DOWNLOAD_HANDLERS", handlers, settings.getpriority("DOWNLOAD_HANDLERS") or 0)
    check_settings(settings)
    verify_certificates(settings)
    if settings.get("REDIS_URL"):
        install_frontier(settings)
    else:
        # Scrapy's own scheduler, watching that every request ends (crawlers.frontier.fates).
        settings.set("SCHEDULER", LOCAL_SCHEDULER, priority=PRIORITY)


def verify_certificates(settings: BaseSettings) -> None:
    """Scrapy's DOWNLOAD_VERIFY_CERTIFICATES (its HTTP/1.1 handler, FETCH_IDENTITY=crawler)
    follows FETCH_TLS_VERIFY, unless set itself above the add-on's priority: one switch
    for the three ways a page is fetched."""
    own = settings.getpriority("DOWNLOAD_VERIFY_CERTIFICATES") or 0
    if own <= SETTINGS_PRIORITIES[PRIORITY]:
        verify = settings.getbool("FETCH_TLS_VERIFY")
        settings.set("DOWNLOAD_VERIFY_CERTIFICATES", verify, priority=PRIORITY)


def install_frontier(settings: BaseSettings) -> None:
    """The Redis frontier's scheduler, dupefilter, client parameters and worker extension."""
    for name, value in FRONTIER.items():
        settings.set(name, value, priority=PRIORITY)
    settings.set("REDIS_PARAMS", redis_params(), priority=PRIORITY)
    setdefault_components(settings, "EXTENSIONS", FRONTIER_EXTENSIONS)


def setdefault_components(
    settings: BaseSettings, name: str, components: dict[str, int | None]
) -> None:
    """Add each component unless the project already lists it (even as None).

    Scrapy's ``setdefault_in_component_priority_dict`` keys by class; import paths keep
    the "Enabled ..." log lines readable.
    """
    if not project_level(settings, name):
        return
    current = settings.getdict(name)
    listed = {load_object(key) for key in current}  # keys may be paths or classes
    added = {path: order for path, order in components.items() if load_object(path) not in listed}
    if added:
        settings.set(name, {**current, **added}, settings.getpriority(name) or 0)


def project_level(settings: BaseSettings, name: str) -> bool:
    """False when a spider's ``custom_settings`` or ``-s`` set the whole dict ``name``.

    The add-on's components count as the project's: such a dict replaces them, as it
    replaces a settings.py's in Scrapy (``-s ITEM_PIPELINES={}``: no pipelines at all).
    """
    return (settings.getpriority(name) or 0) <= SETTINGS_PRIORITIES["project"]


def check_settings(settings: BaseSettings) -> None:
    """Raise ConfigurationError (one line: the setting and its fix) for a malformed value.

    The services' URLs, a proxy file that cannot be read, and every platform default's
    type: a boolean must read as one, a number as one.
    """
    check_redis_url(settings.get("REDIS_URL"))
    check_elasticsearch_url(settings.get("ELASTICSEARCH_URL"))
    check_http_url(settings.get("DEMO_SITE_URL"), "DEMO_SITE_URL")
    check_identity(settings, probe=False)
    path = settings.get("ROTATING_PROXY_LIST_PATH")
    if path:
        read_proxy_file(path, "ROTATING_PROXY_LIST_PATH")
    for entry in settings.getlist("ROTATING_PROXY_LIST"):
        check_proxy_url(entry, "ROTATING_PROXY_LIST (PROXY_LIST)")
    for name in dir(defaults):
        default = getattr(defaults, name)
        if not name.isupper() or name not in settings or settings.get(name) is None:
            continue
        value = settings.get(name)
        if isinstance(default, bool):
            _check(settings.getbool, name, value, "a boolean (true or false)", "true")
        elif isinstance(default, int | float):
            _check(settings.getfloat, name, value, "a number", repr(default))


def _check(read: Any, name: str, value: object, kind: str, example: str) -> None:
    try:
        read(name)
    except (TypeError, ValueError):
        raise ConfigurationError(
            f"{name}={value!r} is not {kind}: set it like `-s {name}={example}`"
        ) from None


class LocalModeSummary:
    """One INFO line at start naming what local mode leaves out, and how to enable it.

    ``scrapy crawl <site> -O items.jsonl`` with no services is a supported way to debug a
    spider, not a misconfiguration: the components it switches off say nothing above
    DEBUG (``crawlers.runtime.logs.not_configured``), and this line says it once. Nothing when
    every service is configured."""

    def __init__(self, line: str) -> None:
        self.line = line

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LocalModeSummary:
        line = local_mode_line(crawler.settings)
        if line is None:
            raise NotConfigured()
        extension = cls(line)
        crawler.signals.connect(extension.engine_started, signal=signals.engine_started)
        return extension

    def engine_started(self) -> None:
        logger.info(self.line)


def local_mode_line(settings: BaseSettings) -> str | None:
    """What a crawl with these settings runs without, as one line (None: nothing)."""
    redis_url, es_url = settings.get("REDIS_URL"), settings.get("ELASTICSEARCH_URL")
    proxies = bool(configured_proxies(settings))
    missing = []
    if not redis_url:
        missing.append("no frontier (Scrapy's own scheduler)")
    if not redis_url and not es_url:
        missing.append("no dedup")
    if not es_url:
        missing.append("no store")
    if not proxies:
        missing.append("no proxies (direct connections)")
    if not missing:
        return None
    unset = [
        name
        for name, value in (
            ("REDIS_URL", redis_url),
            ("ELASTICSEARCH_URL", es_url),
            ("PROXY_LIST", proxies),
        )
        if not value
    ]
    return f"local mode: {', '.join(missing)}; set {'/'.join(unset)} to enable"
