"""A site's language, from its profile: the market it is fetched in (``[fetch]
accept_language``, else the platform's default ``Accept-Language``)."""

from __future__ import annotations

from pathlib import Path

from core.languages import language_of
from crawlers.defaults import BROWSER_ACCEPT_LANGUAGE
from crawlers.profiles import PROFILES_DIR, ProfileError, SiteProfile


def site_language(site: str, directory: Path = PROFILES_DIR) -> str | None:
    """``es`` for a site fetched with ``es-ES,es;q=0.9``; None for a site without a profile."""
    try:
        profile = SiteProfile.load(site, directory)
    except ProfileError:
        return None
    return language_of(profile.fetch.accept_language or BROWSER_ACCEPT_LANGUAGE)
