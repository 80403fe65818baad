"""The platform's crawl defaults: the one place each is written.

A settings module (uppercase names only): the add-on (``crawlers.addon``) applies it at
'addon' priority, so a project's settings.py, a spider's ``custom_settings``, a site
profile's ``[settings]`` and ``-s NAME=value`` all override it the Scrapy way. Components
(middlewares, pipelines, handlers) and the frontier's scheduler are the add-on's own
tables; the environment variables feeding some of these names are ``core.config``'s
table. Read a setting without a fallback (``settings.getfloat("STORE_FLUSH_INTERVAL")``):
its default is here. docs/configuration.md lists them all.
"""

from __future__ import annotations

# Imported as a module: every uppercase name here is a setting (Settings.setmodule).
from core import config

# --- services (docs/configuration.md: set by environment variable or -s) ---
REDIS_URL = None  # the frontier, dedup and the store's spill; None: all off
REDIS_CLUSTER = False  # REDIS_URL is a seed node of a Redis Cluster (core.redis_client)
ELASTICSEARCH_URL = None  # the store; None: the store pipeline is off
ELASTICSEARCH_USERNAME = None
ELASTICSEARCH_PASSWORD = None  # secret: SecretStr from the environment
ELASTICSEARCH_API_KEY = None  # secret
PLATFORM_RUN_DIR = str(config.DEFAULT_RUN_DIR)
JOB_ID = None  # None: each crawl starts a new job id
DEMO_SITE_URL = config.DEFAULT_DEMO_SITE_URL
FACEBOOK_SESSION_COOKIES = None  # secret

# --- identity: what every request presents (crawlers/fetch/identity.py, docs/fetching.md) ---
# "browser": every request, plain or rendered, presents the installed Chromium (its
# User-Agent without "Headless", client hints, header order; plain requests through
# curl_cffi with its TLS/HTTP2 fingerprint). "crawler": the platform announces itself
# (USER_AGENT, Scrapy's HTTP/1.1 handler), for sites that need nothing more.
FETCH_IDENTITY = "browser"
# The platform's own name, sent with FETCH_IDENTITY=crawler. robots.txt rules are
# matched for its product token whatever identity is presented: politeness does not
# depend on the disguise.
USER_AGENT = "scraping-platform/0.1 (+https://example.invalid/bot)"
ROBOTSTXT_USER_AGENT = "scraping-platform"
# The market's languages, as Chromium sends them for their tags (a region tag, its base
# language, q-values from 0.9 down): a site profile's [settings] chooses its own, e.g.
# "es-ES,es;q=0.9". Plain requests send it, Chromium is launched with its tags.
BROWSER_ACCEPT_LANGUAGE = "en-US,en;q=0.9"
# None: the version of the installed Chromium (`<chromium> --version`). A version
# (156.0.8078.114) presents that one on a machine without Chromium that renders nothing.
BROWSER_VERSION = None
# TLS certificates of sites are not verified (Scrapy's own default): plain requests, the
# browser's contexts (ignore_https_errors) and Scrapy's DOWNLOAD_VERIFY_CERTIFICATES.
FETCH_TLS_VERIFY = False
# curl_cffi sessions (a connection pool each) of the plain-request handler, one per
# proxy and fetch session; beyond, the least recently used idle one is closed.
FETCH_MAX_SESSIONS = 64
# Scrapy's generic Accept / Accept-Language would be a tell next to a browser's; the
# identity's headers replace them (FETCH_IDENTITY=crawler sends Scrapy's own).
DEFAULT_REQUEST_HEADERS: dict[str, str] = {}
# Chrome's referrer policy: the full URL to the same origin, only the origin elsewhere
# (Scrapy's default sends the full URL to every site).
REFERRER_POLICY = "strict-origin-when-cross-origin"

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
# A page over this size is refused rather than parsed (one whose Content-Length says so
# before its body is read); counted by Scrapy as an error, never retried.
DOWNLOAD_MAXSIZE = 32 * 1024 * 1024
DOWNLOAD_WARNSIZE = 8 * 1024 * 1024
# Response header lines up to this size are read (Chromium reads 256 KB of headers;
# Twisted's own limit is 16 KB a line): crawlers/fetch/header_limit.py. 0: Twisted's.
DOWNLOAD_MAX_HEADER_SIZE = 256 * 1024

COOKIES_ENABLED = False
TELNETCONSOLE_ENABLED = False
# Scrapy's remote-control server runs code sent to it: never on a crawl worker.
REMOTE_CONTROL_ENABLED = False

# asyncio reactor: required by scrapy-playwright, and Scrapy's default.
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"

FEED_EXPORT_ENCODING = "utf-8"
LOG_LEVEL = "INFO"
# Scrapy's, with items the store gave up at DEBUG: its one ERROR line says why for all.
LOG_FORMATTER = "crawlers.runtime.logs.PlatformLogFormatter"

# HTTP cache: for local debugging only (`-s HTTPCACHE_ENABLED=1`), never in production.
HTTPCACHE_ENABLED = False
HTTPCACHE_DIR = "httpcache"
HTTPCACHE_EXPIRATION_SECS = 0
HTTPCACHE_POLICY = "crawlers.fetch.cache.BlockAwareCachePolicy"  # never stores block pages
HTTPCACHE_IGNORE_HTTP_CODES = [401, 403, 407, 429, 451, 500, 502, 503, 504]

# --- the frontier (crawlers/frontier/, docs/frontier.md); active only with REDIS_URL ---
FRONTIER_HEARTBEAT_INTERVAL = 2.0
FRONTIER_HEARTBEAT_TTL = 15.0
FRONTIER_IDLE_POLL_INTERVAL = 0.2
FRONTIER_STATS_INTERVAL = 1.0
FRONTIER_IDLE_CLOSE_SECONDS = 30.0
FRONTIER_ALWAYS_ON = False
# Leases taken per round trip, and acks sent per round trip (see docs/frontier.md).
FRONTIER_LEASE_BATCH = 4
FRONTIER_ACK_BATCH = 32
# Partitions of a site's frontier (queue, leases, seen-sets), each in its own Redis Cluster
# slot: 1 keeps a site in its one {site} slot (one Redis); on a cluster a multiple of its
# masters spreads one site over all of them. Recorded by the producer at a job's start.
FRONTIER_PARTITIONS = 1
# A request whose items failed in the pipelines (item_error: dedup or the store gave up,
# the item is not durable) is crawled again this often, then acked with the failure counted.
FRONTIER_ITEM_RETRY_TIMES = 2
# A worker started while Redis is down waits for it (crawlers/frontier/connect.py): a ping every
# FRONTIER_CONNECT_BACKOFF s, doubling up to the max. An always-on worker waits as long as
# it takes; any other crawl gives up after FRONTIER_CONNECT_TIMEOUT s (exit status 2).
FRONTIER_CONNECT_BACKOFF = 1.0
FRONTIER_CONNECT_BACKOFF_MAX = 30.0
FRONTIER_CONNECT_TIMEOUT = 120.0

# --- the store (crawlers/pipelines/store.py, docs/pipelines.md); needs ELASTICSEARCH_URL ---
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
STORE_INDEX_REPLICAS = "auto"  # replicas of new item indices; auto: 1 on 2+ data nodes, else 0
STORE_SPILL_DIR = None  # without Redis: spill files here (None: PLATFORM_RUN_DIR/spill)
# Write the job's document into the `jobs` index at spider close. None: only in local mode
# (no frontier); with the frontier the flow writes it after the drain, for all workers.
STORE_JOB_DOCUMENT_AT_CLOSE = None

# --- dedup (crawlers/pipelines/dedup.py): one bounded retry layer for its state reads ---
# Attempts at reading/writing the change state (Redis, or the stored documents without
# Redis), backing off from DEDUP_RETRY_BACKOFF doubling up to the max (about 26 s in
# all); then the item fails (item_error, dedup/failed) and the frontier crawls it again.
DEDUP_RETRY_TIMES = 10
DEDUP_RETRY_BACKOFF = 0.1
DEDUP_RETRY_BACKOFF_MAX = 5.0

# --- conditional requests (crawlers/fetch/conditional.py, docs/recrawl.md) ---
# Item page URLs whose validators one Redis round trip looks up (requests in flight are
# coalesced); the records are written by crawlers/pipelines/recrawl.py, retried as dedup.
RECRAWL_CONDITIONAL_BATCH = 500
# False: item pages are never asked conditionally (a full re-crawl, with RECRAWL_CARD_SKIP
# false too); their validators are still recorded for the next crawl.
RECRAWL_CONDITIONAL = True

# --- re-crawls: listing cards (crawlers/recrawl/cards.py, docs/recrawl.md) ---
# Skip detail pages whose listing card is as at the item's last full fetch (the profile's
# [recrawl] card_fields). False: every card's page is fetched (a full crawl; the cards
# are still recorded), e.g. `-s RECRAWL_CARD_SKIP=false`.
RECRAWL_CARD_SKIP = True

# --- proxies (crawlers/fetch/proxies.py, docs/fetching.md); off without a list ---
# PROXY_LIST / PROXY_LIST_FILE for every site, or a site's own ROTATING_PROXY_LIST /
# ROTATING_PROXY_LIST_PATH in its profile's [settings].
ROTATING_PROXY_LIST: list[str] = []
ROTATING_PROXY_BAN_POLICY = "crawlers.fetch.proxies.BlockBanPolicy"  # core.fetch.blocks verdicts
ROTATING_PROXY_BACKOFF_BASE = 300  # a banned proxy rests up to 5 min at first, doubling ...
ROTATING_PROXY_BACKOFF_CAP = 3600  # ... up to an hour
ROTATING_PROXY_CLOSE_SPIDER = False  # every proxy dead: check them all again, do not stop
ROTATING_PROXY_LOGSTATS_INTERVAL = 60

# --- block pages and retries (crawlers/fetch/retry.py) ---
# Block pages (blocked/captcha/throttled) are retried this often, then dropped; network
# errors and RETRY_HTTP_CODES get RETRY_TIMES. Each retry waits an exponential backoff with
# jitter (base doubling per attempt, capped; at least a 429's Retry-After, capped).
BLOCK_RETRY_TIMES = 3
RETRY_BACKOFF_BASE = 0.5
RETRY_BACKOFF_MAX = 30.0

# --- parts of an item (SiteSpider.retry_part): reviews API, a detail page behind a card ---
# A part whose request failed through the retries above is queued again in the frontier,
# waiting PART_RETRY_BACKOFF doubling (with jitter, capped) first, up to PART_RETRY_TIMES
# rounds spread over the job; then its item is stored marked `incomplete` and counted.
PART_RETRY_TIMES = 3
PART_RETRY_BACKOFF = 5.0
PART_RETRY_BACKOFF_MAX = 60.0

# --- rendering (crawlers/fetch/rendering.py) ---
# RENDER_MODE is the profile's `render` (never | always | per_request). The download
# handler starts Chromium only when a request is rendered, so it serves every site.
RENDER_MODE = "never"
RENDER_HARD_TIMEOUT = 90.0  # wall-clock seconds per browser request, everything included
RENDER_RESTART_AFTER_TIMEOUTS = 3  # hard timeouts in a row that recycle a hung browser
RENDER_ABORT_RESOURCE_TYPES = ["image", "font", "media"]  # [] in a profile keeps them
# Pages stay open for the next request of their context (about 1.5x the pages/s); each
# is closed after this many pages, which bounds the memory a long-lived page gathers.
RENDER_REUSE_PAGES = True
RENDER_PAGE_MAX_USES = 20
# Chromium is closed after this many seconds without a browser request (it costs CPU even
# idle) and launched again by the next one; 0: kept until the crawl ends.
RENDER_BROWSER_IDLE_CLOSE = 10.0
# scrapy-playwright's public extension points the rendering handler relies on:
# Chromium and the Playwright driver start with the first rendered request ...
PLAYWRIGHT_BROWSER_PROVIDER = "crawlers.fetch.browser.LazyBrowserProvider"
# ... RENDER_ABORT_RESOURCE_TYPES are aborted per page (a site may set its own function) ...
PLAYWRIGHT_ABORT_REQUEST = "crawlers.fetch.browser.abort_request"
# ... and a crashed browser is relaunched on the next request (crash recovery).
PLAYWRIGHT_RESTART_DISCONNECTED_BROWSER = True
# Chromium's own headers on every browser request, navigations included: scrapy-playwright
# would otherwise put the Scrapy request's headers on the navigation (the crawler's
# User-Agent beside Chromium's client hints). A rendered request's own headers are not
# sent; its context's User-Agent is the identity's (crawlers.fetch.rendering).
PLAYWRIGHT_PROCESS_REQUEST_HEADERS = None

PLAYWRIGHT_BROWSER_TYPE = "chromium"
# The features Playwright 1.65.2 disables at launch (its chromiumSwitches); a test reads
# the installed driver's list and fails when an upgrade changes it.
playwright_disabled_features = (
    "AvoidUnnecessaryBeforeUnloadCheckSync",
    "DestroyProfileOnBrowserClose",
    "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable",
    "LensOverlay",
    "MediaRouter",
    "PaintHolding",
    "ThirdPartyStoragePartitioning",
    "AvoidCorsURLLoaderRestartOnRedirect",
    "TcpPortRandomizationWin",
    "OptimizationHints",
    "NetworkTimeServiceQuerying",
    "AimEnabled",
    "PreconnectToSearch",
    "msForceBrowserSignIn",
    "msEdgeUpdateLaunchServicesPreferredVersion",
)
PLAYWRIGHT_LAUNCH_OPTIONS = {
    # CHROMIUM_PATH (environment) replaces this key only.
    "executable_path": config.find_chromium(),
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
        # CPU per rendered page (docs/fetching.md "Rendering cost"): Chromium otherwise
        # starts a renderer process for nearly every navigation of a pooled page (spare
        # renderers), about a third of a page's CPU. Pages of a context share these few
        # processes; a renderer crash fails the requests of the pages sharing it, which
        # are retried like any browser failure.
        "--renderer-process-limit=4",
        # navigator.webdriver is true under automation unless this Blink feature is off:
        # the first thing a bot defense's script reads.
        "--disable-blink-features=AutomationControlled",
        # Chromium keeps only the last --disable-features switch, so this one repeats
        # the list Playwright passes (playwright_disabled_features above) and adds the spare
        # renderer and RenderDocument's new document per navigation (about -0.02 CPU s
        # per rendered page, docs/fetching.md "Rendering cost").
        "--disable-features="
        + ",".join(
            [*playwright_disabled_features, "SpareRendererForSitePerProcess", "RenderDocument"]
        ),
    ],
}
PLAYWRIGHT_MAX_CONTEXTS = 4
PLAYWRIGHT_MAX_PAGES_PER_CONTEXT = 4
PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT = 30_000

# --- fetch sessions (crawlers/fetch/sessions.py, core/sessions/store.py, docs/fetching.md) ---
# A session is one visitor of the site: an identity, a proxy, a cookie jar, a budget. Off
# by default (a site that needs nothing pays nothing); a profile's [fetch] turns it on.
SESSIONS_ENABLED = False
# "defense": requests go out as the crawl's own until the site answers a block, challenge,
# CAPTCHA or 429 (remembered for every worker), then as sessions; "always": from the start.
SESSIONS_ENGAGE = "defense"
SESSION_POOL_SIZE = 8  # sessions of the site at once, over all workers
SESSION_MAX_RATE = 2.0  # requests per second of one session (its rate budget; 0: none)
SESSION_MAX_USES = 500  # requests before a session is retired (0: no limit)
SESSION_MAX_AGE = 3600.0  # seconds before a session is retired (0: no limit)
SESSION_MAX_ERRORS = 3  # network errors and throttles (each good answer takes one back)
SESSION_WAIT_MAX = 5.0  # longest single wait for a free session, in seconds (then again)
# A JavaScript challenge is passed in Chromium, in the session's context, within this
# many seconds (any rendered page waits a challenge out as long); its cookies then serve
# the session's plain requests. False: a challenge retires the session (sites where no
# browser may run).
SESSION_PASS_CHALLENGES = True
SESSION_CHALLENGE_TIMEOUT = 30.0

# --- RENDER_MODE = "auto" (crawlers/fetch/adaptive.py, core/fetch/render_choice.py) ---
# Pages of a page type compared both ways before it is decided (one difference: render);
# the share of a rendered type's pages still compared (a plain fetch beside the render);
# the age in seconds of a plain type's last comparison that makes one page compared again
# (a render costs a hundred plain pages: a site that needs no browser pays that rarely),
# and that a page found the same while its type learns goes plain when asked for again.
RENDER_AUTO_SAMPLE = 3
RENDER_AUTO_RECHECK = 0.02
RENDER_AUTO_RECHECK_AFTER = 86_400.0
# Seconds a learning page type's other requests are held for its verdict (then rendered);
# a sample not compared within it is taken as lost and another one starts.
RENDER_AUTO_HOLD = 30.0

# --- a site that refuses the crawl as a whole (crawlers/fetch/refusal.py) ---
# Once this many responses came and every one was a block, the crawl closes (reason
# "refused", exit status 3) with one line naming the refusal; 0: never closes early.
REFUSAL_CLOSE_AFTER = 100

# --- crawl budgets (crawlers/limits/budget.py); a profile's [budget] table overrides them ---
# Every spider's crawl stops, whatever the site links to: each budget reached is named in
# one WARNING line and counted (budget/reached/<name>, budget/refused/<name>).
DEPTH_LIMIT = 50  # links followed from a start page (Scrapy's DepthMiddleware); 0: none
# Pages in a row reached from a page of the same URL shape (digits normalised): an endless
# ?page=N+1 or /day/N -> /day/N+1 chain stops here; 0: none.
CRAWL_MAX_CHAIN = 100
CRAWL_MAX_PAGES = 0  # pages per job over all workers (the job then ends); 0: none
CRAWL_MAX_SECONDS = 0.0  # wall time of the job in seconds (then it ends); 0: none
# Requests followed from one page; the rest are counted (links/capped) and dropped.
CRAWL_MAX_LINKS_PER_PAGE = 1000
CRAWL_LINK_BATCH = 100  # requests handed to the scheduler before the event loop runs again

# --- bounded values (crawlers/limits/bounded.py) ---
# Text fields of an item longer than this are cut and marked " [truncated: N more
# characters]" by the validation pipeline, counted (items/truncated_fields); 0: no cap.
ITEM_FIELD_MAX_CHARS = 100_000
# Log lines longer than this are cut (the rest counted in the line); 0: never cut.
LOG_MAX_LINE_CHARS = 4000
# WARNING/ERROR lines repeated but for their URLs (crawlers/limits/log_repeats.py): the
# first few are written, the rest summed up in one line per LOG_REPEATS_INTERVAL seconds
# and at close, with a few of their URLs; log_count/* still counts each. 0: all written.
LOG_REPEATS_SHOWN = 3
LOG_REPEATS_INTERVAL = 60.0

# --- spiders ---
MAX_LISTING_PAGES = 10  # listing pages followed per start entry (a profile may lower it)
