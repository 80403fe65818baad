"""What the pipelines share: the full fetch of a seen item whose state is gone
(``refetch``), and Elasticsearch refusing the crawl's credentials (``report_auth_refused``).
What one pipeline leaves for a later one about an item travels on the item
(``crawlers.runtime.item_context``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem
from scrapy.utils.defer import deferred_from_coro

from core.es_access import AUTH_REASON, AUTH_REFUSED, AUTH_STAT, auth_line
from crawlers.recrawl.context import RECRAWL_META, ItemSeen, RecrawlContext
from crawlers.runtime.jobs import JOB_META, job_of

__all__ = [
    "refetch",
    "report_auth_refused",
]

logger = logging.getLogger(__name__)


def refetch(crawler: Crawler, seen: ItemSeen, why: str) -> DropItem:
    """Queue a full fetch of the page of ``seen``, whose state is gone (``why``:
    ``unknown`` to dedup, ``document_missing`` in Elasticsearch), and return the
    ``DropItem`` that ends the ``ItemSeen`` (logged at INFO: it is handled).

    The request goes through the engine's scheduler: with the frontier it is pushed to
    Redis before the lease of the ``ItemSeen``'s response is acked, so a worker killed
    now still has the page fetched. Its items then go through the pipelines like any
    other (a new or changed verdict, or unchanged against what dedup still knows).
    """
    stats = crawler.stats
    callback = getattr(crawler.spider, seen.callback, None)
    if crawler.engine is None or not callable(callback):
        if stats is not None:
            stats.inc_value(f"recrawl/refetch_failed/{why}")
        return DropItem(
            f"{seen.key}: state gone ({why}) and no spider callback {seen.callback!r} "
            "to fetch its page in full",
            log_level="ERROR",
        )
    meta: dict[str, Any] = {RECRAWL_META: RecrawlContext(key=seen.key, full=True)}
    job_id = job_of({"job_id": seen.job_id}, crawler)
    if job_id is not None:
        meta[JOB_META] = job_id
    request = Request(seen.url, callback=callback, dont_filter=True, meta=meta)
    crawler.engine.crawl(request)
    if stats is not None:
        stats.inc_value(f"recrawl/refetch/{why}")
    return DropItem(
        f"{seen.key} seen {seen.reason} but its state is gone ({why}): "
        f"{seen.url} is fetched in full instead",
        log_level="INFO",
    )


def report_auth_refused(
    crawler: Crawler, status: int, es_kwargs: Mapping[str, Any], consequence: str
) -> None:
    """Elasticsearch refused the crawl's credentials (401): one ERROR line for the whole
    crawl (whichever pipeline met it first), and the crawl closes (reason
    ``elasticsearch_auth``; ``scrapy crawl`` exits 2 on the stat). A 403 (a privilege
    missing on one index) is logged once per crawl and the crawl goes on."""
    stats = crawler.stats
    flag = AUTH_STAT if status == AUTH_REFUSED else f"{AUTH_STAT}/{status}"
    if stats is None or stats.get_value(flag):
        return
    line = auth_line(status, es_kwargs)
    stats.set_value(flag, line)
    if status != AUTH_REFUSED:
        logger.error("%s; %s", line, consequence)
        return
    logger.error("%s; closing the crawl, %s", line, consequence)
    engine = crawler.engine
    if engine is not None:
        deferred_from_coro(engine.close_spider_async(reason=AUTH_REASON)).addErrback(
            lambda failure: logger.error("closing the crawl failed: %s", failure.value)
        )
