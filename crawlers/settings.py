"""Scrapy settings: the one place for the crawlers' defaults.

Site-specific values (politeness, rendering, proxies) come from each spider's profile;
service endpoints come from the environment through ``core.config``. With no
environment at all, ``scrapy crawl <site>`` runs on Scrapy's own scheduler and writes
only what ``-O`` asks for.
"""

from __future__ import annotations

from core.config import get_settings

_platform = get_settings()

BOT_NAME = "crawlers"
SPIDER_MODULES = ["crawlers.spiders"]
NEWSPIDER_MODULE = "crawlers.spiders"

USER_AGENT = "scraping-platform/0.1 (+https://example.invalid/bot)"

# Politeness: robots.txt is obeyed unless a site's profile says otherwise.
ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS = 32
CONCURRENT_REQUESTS_PER_DOMAIN = 16
# Scrapy runs up to CONCURRENT_ITEMS outputs of one callback as parallel asyncio tasks;
# the default 100 made the demo crawl about 2x slower for no gain.
CONCURRENT_ITEMS = 16
DOWNLOAD_DELAY = 0.0
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 0.5
AUTOTHROTTLE_MAX_DELAY = 30.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 8.0

DOWNLOAD_TIMEOUT = 30
RETRY_ENABLED = True
RETRY_TIMES = 3
RETRY_HTTP_CODES = [500, 502, 503, 504, 522, 524, 408, 429]
REDIRECT_MAX_TIMES = 10
# A page over this size is refused rather than parsed; counted by Scrapy as an error.
DOWNLOAD_MAXSIZE = 32 * 1024 * 1024
DOWNLOAD_WARNSIZE = 8 * 1024 * 1024

COOKIES_ENABLED = False
TELNETCONSOLE_ENABLED = False

# asyncio reactor: required by scrapy-playwright, and Scrapy's default.
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"

FEED_EXPORT_ENCODING = "utf-8"

# HTTP cache: for local debugging only (`-s HTTPCACHE_ENABLED=1`), never in production.
HTTPCACHE_ENABLED = False
HTTPCACHE_DIR = "httpcache"
HTTPCACHE_EXPIRATION_SECS = 0

# Browser rendering: applied by spiders that render (see crawlers.rendering).
PLAYWRIGHT_BROWSER_TYPE = "chromium"
PLAYWRIGHT_LAUNCH_OPTIONS = {
    "executable_path": _platform.chromium_executable(),
    "headless": True,
    # Without these flags Chromium keeps calling home, which a closed network refuses.
    "args": [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
    ],
}
PLAYWRIGHT_MAX_CONTEXTS = 4
PLAYWRIGHT_MAX_PAGES_PER_CONTEXT = 4
PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT = 30_000

LOG_LEVEL = "INFO"

SPIDER_MIDDLEWARES = {
    # The outermost spider middleware: sees every response first and exactly the output
    # that reaches the scraper, to ack frontier leases (off without the frontier).
    "crawlers.frontier.LeaseAckMiddleware": 0,
    # Early in input order, so every request/item a callback yields passes through it.
    "crawlers.middlewares.JobTagMiddleware": 50,
}
EXTENSIONS = {
    # NotConfigured (off) unless the leasing scheduler below is active.
    "crawlers.extensions.FrontierWorker": 100,
}

# The distributed frontier: scrapy-redis' scheduler with our lease -> ack queue.
# Only when REDIS_URL is set; otherwise Scrapy's own scheduler runs `scrapy crawl`.
FRONTIER_HEARTBEAT_INTERVAL = 2.0
FRONTIER_HEARTBEAT_TTL = 15.0
FRONTIER_IDLE_POLL_INTERVAL = 0.2
FRONTIER_STATS_INTERVAL = 1.0
FRONTIER_IDLE_CLOSE_SECONDS = 30.0
FRONTIER_ALWAYS_ON = False
# Leases taken per round trip, and acks sent per round trip (see docs/frontier.md).
FRONTIER_LEASE_BATCH = 4
FRONTIER_ACK_BATCH = 32
# A request whose items failed in the pipelines (item_error) is crawled again this often.
FRONTIER_ITEM_RETRY_TIMES = 2
if _platform.redis_url:
    from redis.backoff import ExponentialBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError
    from redis.retry import Retry

    REDIS_URL = _platform.redis_url
    SCHEDULER = "crawlers.frontier.LeasingScheduler"
    SCHEDULER_QUEUE_CLASS = "crawlers.frontier.LeasedQueue"
    DUPEFILTER_CLASS = "crawlers.frontier.JobDupeFilter"
    # The frontier belongs to the site, not to one worker: never flushed at close.
    SCHEDULER_PERSIST = True
    REDIS_PARAMS = {
        # Short timeouts + a few quick retries: a hung Redis must not freeze the reactor
        # for long; longer outages are ridden out by the scheduler's local buffers.
        "socket_timeout": 5,
        "socket_connect_timeout": 2,
        "health_check_interval": 15,
        "retry": Retry(ExponentialBackoff(cap=1.0, base=0.05), retries=3),
        "retry_on_error": [RedisConnectionError, RedisTimeoutError],
    }

# --- Item pipelines: validate -> dedup -> store (crawlers/pipelines, docs/pipelines.md) ---
# Validation always runs. Dedup needs REDIS_URL and store needs ELASTICSEARCH_URL: each is
# off (NotConfigured) without its service, so `scrapy crawl <site> -O items.jsonl` still
# works with no services at all.
ITEM_PIPELINES = {
    "crawlers.pipelines.validate.ValidationPipeline": 100,
    "crawlers.pipelines.dedup.DedupPipeline": 200,
    "crawlers.pipelines.store.StorePipeline": 300,
}
STORE_BULK_SIZE = 500  # documents per bulk request: a full buffer is sent at once
# Seconds the oldest buffered item waits before a (smaller) bulk is sent. The drain step
# must see the job's counters stable for longer than this before the LLM step runs.
STORE_FLUSH_INTERVAL = 1.0
STORE_MAX_BUFFER = 5000  # items held in memory; beyond, new items go to the spill
STORE_SPILL_AFTER = 5.0  # seconds of failed retries before items go to the durable spill
STORE_MAX_ITEM_RETRIES = 5  # per-item retries (backoff below) before the spill
STORE_RETRY_BACKOFF = 0.5  # seconds, doubled per attempt ...
STORE_RETRY_BACKOFF_MAX = 8.0  # ... up to this
STORE_REQUEST_TIMEOUT = 10.0  # seconds per Elasticsearch request
STORE_CLOSE_TIMEOUT = 30.0  # at close: retry this long, then spill what is left
STORE_INDEX_REPLICAS = 0  # replicas of new item indices (0 suits a single node)
STORE_SPILL_DIR = None  # without Redis: spill files here (None: PLATFORM_RUN_DIR/spill)
# Write the job's document into the `jobs` index at spider close. None: only in local mode
# (no frontier); with the frontier the flow writes it after the drain, for all workers.
STORE_JOB_DOCUMENT_AT_CLOSE = None

# --- Fetching: proxies, block pages, retries, rendering (crawlers/fetch, docs/fetching.md) ---
DOWNLOADER_MIDDLEWARES = {
    # Scrapy's retry and redirect are replaced by subclasses: retries back off, change
    # proxy and drop block pages; abandoned redirect loops are counted.
    "scrapy.downloadermiddlewares.retry.RetryMiddleware": None,
    "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
    "crawlers.fetch.retry.CountingRedirectMiddleware": 600,
    # Responses pass high -> low: decompressed (590) -> ban verdict (588) -> proxy marked
    # (587) -> counted, retried or dropped (585) -> meta refresh (580) -> callbacks.
    "crawlers.fetch.proxies.BanDetection": 588,
    "crawlers.fetch.proxies.RotatingProxies": 587,
    "crawlers.fetch.retry.BlockRetryMiddleware": 585,
    "crawlers.fetch.encoding.EncodingRepairMiddleware": 584,  # cp1252 labelled UTF-8
    # Requests pass low -> high: proxy chosen (587) -> render flag (740) -> proxy auth (750).
    "crawlers.fetch.rendering.RenderMiddleware": 740,
}
# Proxies (off without a list): PROXY_LIST / PROXY_LIST_FILE for every site, or a site's
# own ROTATING_PROXY_LIST / ROTATING_PROXY_LIST_PATH in its profile's [settings].
ROTATING_PROXY_LIST = _platform.proxies()
ROTATING_PROXY_BAN_POLICY = "crawlers.fetch.proxies.BlockBanPolicy"  # core.blocks verdicts
ROTATING_PROXY_BACKOFF_BASE = 300  # a banned proxy rests up to 5 min at first, doubling ...
ROTATING_PROXY_BACKOFF_CAP = 3600  # ... up to an hour
ROTATING_PROXY_CLOSE_SPIDER = False  # every proxy dead: check them all again, do not stop
ROTATING_PROXY_LOGSTATS_INTERVAL = 60
# Block pages (blocked/captcha/throttled) are retried this often, then dropped; network
# errors and RETRY_HTTP_CODES get RETRY_TIMES. Each retry waits an exponential backoff with
# jitter (base doubling per attempt, capped; at least a 429's Retry-After, capped).
BLOCK_RETRY_TIMES = 3
RETRY_BACKOFF_BASE = 0.5
RETRY_BACKOFF_MAX = 30.0
# Rendering: RENDER_MODE is the profile's `render` (never | always | per_request). The
# handler starts Chromium only when a request is rendered, so it serves every site.
RENDER_MODE = "never"
DOWNLOAD_HANDLERS = {
    "http": "crawlers.fetch.rendering.ResilientPlaywrightHandler",
    "https": "crawlers.fetch.rendering.ResilientPlaywrightHandler",
}
RENDER_HARD_TIMEOUT = 90.0  # wall-clock seconds per browser request, everything included
RENDER_RESTART_AFTER_TIMEOUTS = 3  # hard timeouts in a row that recycle a hung browser
RENDER_ABORT_RESOURCE_TYPES = ["image", "font", "media"]  # [] in a profile keeps them
# Pages stay open for the next request of their context (about 1.5x the pages/s); each
# is closed after this many pages, which bounds the memory a long-lived page gathers.
RENDER_REUSE_PAGES = True
RENDER_PAGE_MAX_USES = 20
# scrapy-playwright's public extension points the rendering handler relies on:
# Chromium and the Playwright driver start with the first rendered request ...
PLAYWRIGHT_BROWSER_PROVIDER = "crawlers.fetch.browser.LazyBrowserProvider"
# ... RENDER_ABORT_RESOURCE_TYPES are aborted per page (a site may set its own function) ...
PLAYWRIGHT_ABORT_REQUEST = "crawlers.fetch.browser.abort_request"
# ... and a crashed browser is relaunched on the next request (crash recovery).
PLAYWRIGHT_RESTART_DISCONNECTED_BROWSER = True
# HTTP cache (debugging only: HTTPCACHE_ENABLED above stays off in production).
HTTPCACHE_POLICY = "crawlers.fetch.cache.BlockAwareCachePolicy"  # never stores block pages
HTTPCACHE_IGNORE_HTTP_CODES = [401, 403, 407, 429, 451, 500, 502, 503, 504]
