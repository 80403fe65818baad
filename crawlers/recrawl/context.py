"""Re-crawl context: what a request knows of the item it fetches, carried to the item.

Re-crawls skip what did not change (docs/recrawl.md): a conditional GET answered 304,
or a listing card whose fields hash as at the item's last full fetch. Either way the
spider yields an ``ItemSeen`` instead of the item: the pipelines count it unchanged and
refresh its ``last_seen``, without its page being parsed.

``request.meta[RECRAWL_META]`` holds a ``RecrawlContext``: set by a spider on the request
of an item's page (the item key and card hash it read on a listing), completed by the
fetch layer (the page's validators). ``RecrawlContextMiddleware`` passes it on to every
request the response's callback yields without one of its own (the reviews API of a
product page, say) and puts it in every yielded item's ``ItemContext``, so whatever records the
item's page state after the item is durable (``context_of``) finds it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

from itemadapter import is_item
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from crawlers.runtime.item_context import RecrawlContext, find_context, item_context
from crawlers.runtime.services import CrawlServices

__all__ = [
    "RECRAWL_META",
    "ItemSeen",
    "RecrawlContext",
    "RecrawlContextMiddleware",
    "context_of",
    "peek_context",
]

RECRAWL_META = "recrawl"


@dataclass
class ItemSeen:
    """An item seen unchanged without parsing its page.

    ``reason``: ``not_modified`` (the page answered 304) or ``card_unchanged`` (its
    listing card hashed as at its last full fetch). Counted ``unchanged`` by dedup (a
    stronger verdict earlier in the job is kept); the store refreshes the stored
    document's ``last_seen`` and ``job_id``. ``callback``: the name of the spider method
    that parses the item's page: when the item's state is gone (dedup or Elasticsearch no
    longer knows the key), the pipelines fetch the page in full with it.
    """

    key: str
    item_type: str
    url: str
    reason: str
    job_id: str | None = None
    callback: str = "parse"


def context_of(item: Any) -> RecrawlContext | None:
    """The re-crawl context of an item a callback yielded, taken off its ``ItemContext``
    (None: its chain had none)."""
    context = find_context(item)
    if context is None:
        return None
    recrawl, context.recrawl = context.recrawl, None
    return recrawl


def peek_context(item: Any) -> RecrawlContext | None:
    """As ``context_of``, but the context stays for the pipeline that takes it later."""
    context = find_context(item)
    return context.recrawl if context is not None else None


class RecrawlContextMiddleware:
    """Spider middleware: passes a response's ``RecrawlContext`` on to the requests and
    items its callback yields."""

    def __init__(self, crawler: Crawler) -> None:
        # The services take items' contexts off once they leave the pipelines.
        CrawlServices.of(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RecrawlContextMiddleware:
        return cls(crawler)

    def _pass_on(self, output: Any, context: RecrawlContext | None) -> Any:
        if context is None:
            return output
        if isinstance(output, Request):
            output.meta.setdefault(RECRAWL_META, context)
        elif is_item(output) and not isinstance(output, ItemSeen):
            with contextlib.suppress(TypeError):  # a dict item carries none
                item_context(output).recrawl = context
        return output

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterable[Any]:
        context = response.meta.get(RECRAWL_META)
        for output in result:
            yield self._pass_on(output, context)

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        context = response.meta.get(RECRAWL_META)
        async for output in result:
            yield self._pass_on(output, context)
