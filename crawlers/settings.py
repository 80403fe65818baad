"""The platform's own Scrapy project: its spiders, the platform add-on, the environment.

Everything else (defaults, middlewares, pipelines, the frontier) comes from the add-on
``crawlers.addon.ScrapingPlatform``, the same one another Scrapy project enables to get
the platform (docs/configuration.md). Environment variables (``core.config.ENVIRONMENT``)
are applied here at 'project' priority, so ``scrapy crawl <site> -s NAME=value``, a
spider's ``custom_settings`` and a site profile's ``[settings]`` override them. With no
environment at all, ``scrapy crawl <site>`` runs on Scrapy's own scheduler and writes
only what ``-O`` asks for.
"""

from __future__ import annotations

from crawlers.runtime.environment import settings_from_environment

BOT_NAME = "crawlers"
SPIDER_MODULES = ["crawlers.spiders"]
NEWSPIDER_MODULE = "crawlers.spiders"
# Scrapy's loader, plus the generic spider of every profile-driven site (crawlers/profiles).
SPIDER_LOADER_CLASS = "crawlers.spiderloader.ProfileSpiderLoader"
COMMANDS_MODULE = "crawlers.commands"  # `scrapy crawl`: an unknown site is one line, exit 2

ADDONS = {"crawlers.addon.ScrapingPlatform": 0}

# REDIS_URL, ELASTICSEARCH_*, JOB_ID, ... from the environment: only the variables that
# are set (an unset one keeps the add-on's default).
globals().update(settings_from_environment())
