"""Component paths of earlier releases, still accepted in operators' settings.

The crawl components moved into feature folders (``crawlers/frontier/``,
``crawlers/recrawl/``, ``crawlers/limits/``, ``crawlers/runtime/``). A project, a profile's
``[settings]`` or ``-s`` that still names an old path gets the component it meant, with
one WARNING naming the new path, instead of an import error at start or, for a ``None``
entry, a component silently switched back on: the add-on rewrites the paths
(``rename_moved``) before it adds its own components.
"""

from __future__ import annotations

import logging

from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

MOVED: dict[str, str] = {
    "crawlers.frontier.LeasingScheduler": "crawlers.frontier.scheduler.LeasingScheduler",
    "crawlers.frontier.LeaseAckMiddleware": "crawlers.frontier.scheduler.LeaseAckMiddleware",
    "crawlers.frontier.LeasedQueue": "crawlers.frontier.queue.LeasedQueue",
    "crawlers.frontier.JobDupeFilter": "crawlers.frontier.queue.JobDupeFilter",
    "crawlers.extensions.FrontierWorker": "crawlers.frontier.worker.FrontierWorker",
    "crawlers.extensions.LocalModeSummary": "crawlers.addon.LocalModeSummary",
    "crawlers.middlewares.JobTagMiddleware": "crawlers.runtime.middlewares.JobTagMiddleware",
    "crawlers.recrawl.RecrawlContextMiddleware": (
        "crawlers.recrawl.context.RecrawlContextMiddleware"
    ),
    "crawlers.cards.CardsPipeline": "crawlers.recrawl.cards.CardsPipeline",
    "crawlers.budget.LinkCap": "crawlers.limits.budget.LinkCap",
    "crawlers.budget.ChainBudget": "crawlers.limits.budget.ChainBudget",
    "crawlers.budget.DepthBudget": "crawlers.limits.budget.DepthBudget",
    "crawlers.budget.JobBudgetCheck": "crawlers.limits.budget.JobBudgetCheck",
    "crawlers.bounded.LogLineCap": "crawlers.limits.bounded.LogLineCap",
}
# Settings naming one component, and dicts of components (path -> order).
SINGLE = ("SCHEDULER", "SCHEDULER_QUEUE_CLASS", "DUPEFILTER_CLASS")
COMPONENT_DICTS = ("DOWNLOADER_MIDDLEWARES", "SPIDER_MIDDLEWARES", "ITEM_PIPELINES", "EXTENSIONS")


def _moved(setting: str, path: str) -> str:
    new = MOVED[path]
    logger.warning("%s names %s, which moved: use %s", setting, path, new)
    return new


def rename_moved(settings: BaseSettings) -> None:
    """Old component paths in ``settings`` replaced by their new ones, at the priority
    each setting has (a dict keeps its entries' orders, ``None`` included)."""
    for name in SINGLE:
        value = settings.get(name)
        if isinstance(value, str) and value in MOVED:
            settings.set(name, _moved(name, value), settings.getpriority(name) or 0)
    for name in COMPONENT_DICTS:
        current = settings.getdict(name)
        if not any(isinstance(key, str) and key in MOVED for key in current):
            continue
        renamed = {
            (_moved(name, key) if isinstance(key, str) and key in MOVED else key): order
            for key, order in current.items()
        }
        settings.set(name, renamed, settings.getpriority(name) or 0)
