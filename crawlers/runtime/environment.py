"""Environment variables -> Scrapy settings, once.

The only module under crawlers/ that reads the environment (a test enforces it): every
crawl component reads ``crawler.settings``. The table of variables, their parsing and
validation are ``core.config.ENVIRONMENT`` (the same PlatformSettings the flows, the
search API and the CLIs read); this module turns it into Scrapy setting values:

    SCRAPE_JOB_ID -> JOB_ID, PROXY_LIST + PROXY_LIST_FILE -> ROTATING_PROXY_LIST,
    CHROMIUM_PATH -> PLAYWRIGHT_LAUNCH_OPTIONS["executable_path"], REDIS_URL -> REDIS_URL, ...

Only variables that are set become settings, so an unset one leaves the add-on's
default. crawlers/settings.py applies the result at 'project' priority: ``-s NAME=value``,
a spider's ``custom_settings`` and a site profile's ``[settings]`` override it. Another
Scrapy project may do the same in its settings.py:

    from crawlers.runtime.environment import settings_from_environment
    globals().update(settings_from_environment())

Secrets stay ``SecretStr`` (``core.config.secret_value`` unwraps them where used).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.config import crawl_environment, crawl_values
from crawlers import defaults


def settings_from_environment(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Scrapy settings from ``environ`` (default: the process environment).

    Raises ``core.config.ConfigurationError`` (one line, no traceback) for a malformed
    value, e.g. a REDIS_URL that is no Redis URL or a PROXY_LIST_FILE that does not exist.
    """
    settings: dict[str, Any] = {}
    for name, (value, key) in crawl_values(crawl_environment(environ)).items():
        if key is not None:
            # One key of a dict setting (CHROMIUM_PATH): the rest stays the default.
            value = {**getattr(defaults, name), key: value}
        settings[name] = value
    return settings
