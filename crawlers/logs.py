"""Logging of crawl processes: the Elasticsearch client's per-attempt lines are kept out.

The store (``core.store.writer``) is the one retry layer of its hop and logs one line per
state change: Elasticsearch unreachable, items spilled, reachable again. The client under
it logs every request (INFO), every failed attempt (a node "put on timeout", WARNING) and,
on a retry, the attempt's full traceback: during one outage a worker's log filled with
them while saying nothing the store's lines do not. As Scrapy does for its own noisy
dependencies (``filelock``, ``hpack``: ERROR in its logging configuration), those loggers
are set once per crawl process to ``QUIET_LEVELS``. With ``LOG_LEVEL = "DEBUG"`` they are
left alone: an operator debugging the client sees everything it says.
"""

from __future__ import annotations

import logging

from scrapy.settings import BaseSettings

QUIET_LEVELS: dict[str, int] = {
    # elastic_transport.transport (requests, retries with tracebacks), .node_pool (nodes
    # marked dead / alive / resurrected), .node (request bodies at DEBUG).
    "elastic_transport": logging.ERROR,
    # The client and its bulk helpers: only their warnings (e.g. a partial scroll).
    "elasticsearch": logging.WARNING,
}


def quiet_client_loggers(settings: BaseSettings) -> None:
    """Set ``QUIET_LEVELS`` unless the crawl logs at DEBUG; idempotent."""
    if str(settings.get("LOG_LEVEL") or "").upper() == "DEBUG":
        return
    for name, level in QUIET_LEVELS.items():
        logging.getLogger(name).setLevel(level)
