"""The project's spider loader (``SPIDER_LOADER_CLASS``): Scrapy's, plus a spider for
every profile-driven site.

A site with a spider module (``crawlers/spiders/<site>.py``) gets that spider, as with
Scrapy's loader. A site whose profile has ``[pages.<name>]`` tables and no spider module
gets the generic spider made from its profile (``crawlers.spiders.generic``), so
``scrapy crawl <site>``, the producer, the structure gate and ``scrape-<site>`` find it
like any other. A profile that fails to load still names a spider: using it stops with
the profile's one-line error (``SiteSpider.update_settings``) instead of "unknown site".

Built beside Scrapy's ``SpiderLoader``, through its public ``load/list/find_by_request``
(``SpiderLoaderProtocol``), not by filling its private tables.
"""

from __future__ import annotations

import builtins
from typing import Any

from scrapy import Request, Spider
from scrapy.settings import BaseSettings
from scrapy.spiderloader import SpiderLoader

from core.config import ConfigurationError
from crawlers.profiles import PROFILES_DIR, ProfileError, SiteProfile, profile_sites
from crawlers.spiders.generic import GenericSpider, generic_spider

__all__ = ["ProfileSpiderLoader"]


class ProfileSpiderLoader:
    def __init__(self, settings: BaseSettings) -> None:
        self.modules = SpiderLoader.from_settings(settings)
        module_sites = set(self.modules.list())
        # The profile-driven spiders, in the profiles' order (after the modules' ones).
        self.profile_spiders: dict[str, type[Spider]] = {}
        for site in profile_sites(PROFILES_DIR):
            if site in module_sites:
                continue
            try:
                profile = SiteProfile.load(site, PROFILES_DIR)
                if not profile.pages:
                    continue  # a site whose spider module is still to be written
                spider: type[Spider] = generic_spider(profile)
            except ProfileError as exc:
                # Named, so that using it reports the profile's own error, not "unknown".
                spider = _unloadable(site, exc)
            self.profile_spiders[site] = spider

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> ProfileSpiderLoader:
        return cls(settings)

    def load(self, spider_name: str) -> type[Spider]:
        spider = self.profile_spiders.get(spider_name)
        return spider if spider is not None else self.modules.load(spider_name)

    def list(self) -> builtins.list[str]:
        return [*self.modules.list(), *self.profile_spiders]

    def find_by_request(self, request: Request) -> builtins.list[str]:
        found = self.modules.find_by_request(request)
        return found + [
            name for name, spider in self.profile_spiders.items() if spider.handles_request(request)
        ]


def _unloadable(site: str, error: ProfileError) -> type[GenericSpider]:
    """A spider standing for a profile that cannot make one: starting it fails with the
    profile's error, one line (as any configuration error)."""

    def update_settings(cls: type, settings: BaseSettings) -> None:
        raise ConfigurationError(str(error))

    attrs: dict[str, Any] = {"name": site, "update_settings": classmethod(update_settings)}
    return type(f"Unloadable{site.title().replace('_', '')}Spider", (GenericSpider,), attrs)
