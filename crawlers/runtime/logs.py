"""Logging of crawl processes: the Elasticsearch client's per-attempt lines are kept out,
and an item the store gave up is not a traceback each.

The store (``core.store.writer``) is the one retry layer of its hop and logs one line per
state change: Elasticsearch unreachable, items spilled, reachable again. The client under
it logs every request (INFO), every failed attempt (a node "put on timeout", WARNING) and,
on a retry, the attempt's full traceback: during one outage a worker's log filled with
them while saying nothing the store's lines do not. As Scrapy does for its own noisy
dependencies (``filelock``, ``hpack``: ERROR in its logging configuration), those loggers
are set once per crawl process to ``QUIET_LEVELS``. With ``LOG_LEVEL = "DEBUG"`` they are
left alone: an operator debugging the client sees everything it says.

``PlatformLogFormatter`` (Scrapy's ``LOG_FORMATTER``): Scrapy logs every item that fails
in the pipelines at ERROR with its traceback. An item the store gave up
(``core.store.StoreUnavailable``: neither written nor spilled in time) is one cause for
all of them, said once by the store's ERROR line and counted (``store/unsaved``): those
go to DEBUG. Every other item error keeps Scrapy's ERROR.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy import Spider
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.logformatter import LogFormatter, LogFormatterResult
from scrapy.settings import BaseSettings
from twisted.python.failure import Failure

from core.store.actions import StoreUnavailable

logger = logging.getLogger(__name__)

QUIET_LEVELS: dict[str, int] = {
    # elastic_transport.transport (requests, retries with tracebacks), .node_pool (nodes
    # marked dead / alive / resurrected), .node (request bodies at DEBUG).
    "elastic_transport": logging.ERROR,
    # The client and its bulk helpers: only their warnings (e.g. a partial scroll).
    "elasticsearch": logging.WARNING,
}


def quiet_client_loggers(settings: BaseSettings) -> None:
    """Set ``QUIET_LEVELS`` unless the crawl logs at DEBUG; idempotent."""
    if str(settings.get("LOG_LEVEL")).upper() == "DEBUG":
        return
    for name, level in QUIET_LEVELS.items():
        logging.getLogger(name).setLevel(level)


def not_configured(component: str, reason: str) -> NotConfigured:
    """NotConfigured for a component that is off because a service is not configured
    (local mode), not because of anything an operator must fix.

    Scrapy logs a NotConfigured that carries a message at WARNING; this one carries none
    (its reason goes to DEBUG), and ``LocalModeSummary`` says once, at INFO, what local
    mode leaves out. A component that is off for a reason to act on raises its own
    NotConfigured with the message."""
    logger.debug("%s off: %s", component, reason)
    return NotConfigured()


class PlatformLogFormatter(LogFormatter):
    """Scrapy's log formatter, with items the store gave up at DEBUG (module docstring)."""

    def item_error(
        self,
        item: Any,
        exception: BaseException,
        response: Response | Failure | None,
        spider: Spider,
    ) -> LogFormatterResult:
        entry = super().item_error(item, exception, response, spider)
        if isinstance(exception, StoreUnavailable):
            return {**entry, "level": logging.DEBUG}
        return entry
