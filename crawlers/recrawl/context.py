"""Re-crawl context: what a request knows of the item it fetches, carried to the item.

Re-crawls skip what did not change (docs/recrawl.md): a conditional GET answered 304,
or a listing card whose fields hash as at the item's last full fetch. Either way the
spider yields an ``ItemSeen`` instead of the item: the pipelines count it unchanged and
refresh its ``last_seen``, without its page being parsed.

``request.meta[RECRAWL_META]`` holds a ``RecrawlContext``: set by a spider on the request
of an item's page (the item key and card hash it read on a listing), completed by the
fetch layer (the page's validators). ``RecrawlContextMiddleware`` passes it on to every
request the response's callback yields without one of its own (the reviews API of a
product page, say) and notes it against every item yielded, so whatever records the
item's page state after the item is durable (``context_of``) finds it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

from itemadapter import is_item
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from crawlers.runtime.notes import ItemNotes, item_notes

RECRAWL_META = "recrawl"
_CONTEXT_NOTES = "recrawl"


@dataclass
class RecrawlContext:
    """What the request of an item's page knows of the item (all optional)."""

    key: str | None = None  # the item key, when known before the fetch (a listing card)
    card_hash: str | None = None  # hash of the listing card's fields the spider read
    full: bool = False  # the rolling refresh: fetched without validators, parsed in full
    url: str | None = None  # the item's page: the URL the validators below belong to
    etag: str | None = None  # the page's validators, as its 200 answer gave them
    last_modified: str | None = None


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


def context_of(crawler: Crawler, item: Any) -> RecrawlContext | None:
    """The re-crawl context of an item a callback yielded, taken off the item (None: its
    chain had none). For an item pipeline: the note is dropped with the item's signals
    (scraped, dropped, error) once the pipelines are done with it."""
    return _notes(crawler).pop(item)


def peek_context(crawler: Crawler, item: Any) -> RecrawlContext | None:
    """As ``context_of``, but the note stays for the pipeline that pops it later."""
    context = _notes(crawler).peek(item)
    return context if isinstance(context, RecrawlContext) else None


def _notes(crawler: Crawler) -> ItemNotes:
    return item_notes(crawler, _CONTEXT_NOTES)


class RecrawlContextMiddleware:
    """Spider middleware: passes a response's ``RecrawlContext`` on to the requests and
    items its callback yields."""

    def __init__(self, crawler: Crawler) -> None:
        self.notes = _notes(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RecrawlContextMiddleware:
        return cls(crawler)

    def _pass_on(self, output: Any, context: RecrawlContext | None) -> Any:
        if context is None:
            return output
        if isinstance(output, Request):
            output.meta.setdefault(RECRAWL_META, context)
        elif is_item(output) and not isinstance(output, ItemSeen):
            self.notes.attach(output, context)
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
