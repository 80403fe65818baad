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
