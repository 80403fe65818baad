"""Listing cards on the spider side: which detail pages a listing callback requests.

``SiteSpider.cards_to_fetch`` returns, per card, its detail request (carrying a
``RecrawlContext`` with the card's hash) or an ``ItemSeen(reason="card_unchanged")``
(the rule is ``core.recrawl.cards``'). ``CardsPipeline`` (390, after the store) records the card
of a complete, durable item so the same card may stand for it next time; a Redis error
fetches (never skips) and leaves the card unrecorded, counted.

Reads: ``REDIS_URL``, ``ELASTICSEARCH_URL`` (the pipeline), ``RECRAWL_CARD_SKIP``, the
profile's ``[recrawl] card_fields``; off without them, and outside a running crawl.
Rules and stats: docs/recrawl.md "Skipping detail pages whose listing card did not
change".
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.http import Response

from core.items_schema import UnknownItemType, plain_fields, schema_for
from core.keys import REDIS_ERRORS
from core.recrawl.cards import UNPARSED, CardPolicy, CardState, Decision, card_hash
from core.recrawl.layouts import NO_BASELINE, baseline_id
from crawlers.profile_schema import Recrawl
from crawlers.recrawl.context import RECRAWL_META, ItemSeen, RecrawlContext, peek_context
from crawlers.recrawl.unparsed import callback_name, skipped_page
from crawlers.runtime.item_context import noted_fields
from crawlers.runtime.jobs import JOB_META, job_of, site_of
from crawlers.runtime.logs import not_configured
from crawlers.runtime.services import CrawlServices

logger = logging.getLogger(__name__)

CARD_UNCHANGED = "card_unchanged"
# Whatever a Redis call may raise that says nothing about the card: fail open.
_ERRORS = (*REDIS_ERRORS, redis.RedisError)
# What a failed call of the asyncio cluster client can raise besides Redis errors: when a
# connection of a node errs, redis-py closes that node's connections under the calls in
# flight (AttributeError / TypeError from the closed transport). Cards are a saving,
# never a reason to fail a page or an item: any of these fails open (fetch, not record).
_CLIENT_ERRORS = (*_ERRORS, AttributeError, TypeError)
# Card records of the items in flight go to Redis in one call per job and batch.
RECORD_BATCH = 200


@dataclass(frozen=True)
class Card:
    """A listing card: the detail request the callback would yield, and its fields (the
    item's id field and what the card shows, as the detail page would give them)."""

    request: Request
    fields: Mapping[str, Any]


def card_key(site: str, item_type: type, card: Card) -> str:
    """The item key, exactly as the pipelines compute it for the detail page's item."""
    schema = schema_for(item_type)
    return schema.key(site, {schema.url_field: card.request.url, **card.fields})


class CardGate:
    """The crawl's card decisions (one per crawler:
    ``CrawlServices.of(crawler).component(CardGate)``), on the crawl's Redis client from
    the spider's opening."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.redis_url: str | None = crawler.settings.get("REDIS_URL")
        self.state: CardState | None = None
        self.layout = NO_BASELINE  # this worker's baseline id (core.recrawl.layouts), at opening
        self._last_warning = 0.0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CardGate:
        gate = cls(crawler)
        crawler.signals.connect(gate.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(gate.spider_closed, signal=signals.spider_closed)
        return gate

    async def spider_opened(self) -> None:
        profile = getattr(self.crawler.spider, "profile", None)
        recrawl: Recrawl | None = getattr(profile, "recrawl", None)
        if not self.redis_url or recrawl is None or not recrawl.card_fields:
            return
        if not self.crawler.settings.getbool("RECRAWL_CARD_SKIP"):
            logger.info("listing cards: RECRAWL_CARD_SKIP is off, fetching every card's page")
            return
        server = CrawlServices.of(self.crawler).redis
        assert self.crawler.spider is not None, "cards are set up while a spider runs"
        site = str(self.crawler.spider.name)
        self.state = CardState(server, site)
        self.layout = baseline_id(site)
        logger.info("listing cards: skipping unchanged cards of %s", ", ".join(recrawl.card_fields))

    def spider_closed(self) -> None:
        self.state = None

    async def outputs(
        self,
        response: Response,
        cards: Sequence[Card],
        item_type: type,
        recrawl: Recrawl,
        site: str,
        default_job: str | None,
    ) -> list[Request | ItemSeen]:
        """Per card, its detail request (with the re-crawl context) or an ``ItemSeen``."""
        if self.state is None or not recrawl.card_fields or not cards:
            return [card.request for card in cards]
        # A card that shows none of the fields (markup this spider no longer reads) is
        # no evidence about its item: fetched, never recorded or skipped by a blank hash.
        unread = [c for c in cards if all(c.fields.get(n) is None for n in recrawl.card_fields)]
        if unread:
            self._count("recrawl/cards/fetched/unread", len(unread))
            cards = [card for card in cards if card not in unread]
        outputs: list[Request | ItemSeen] = [card.request for card in unread]
        job_id = str(response.meta.get(JOB_META) or default_job or "unassigned")
        # One decision call per detail callback (the page type a skip stands for).
        by_callback: dict[str, list[Card]] = {}
        for card in cards:
            by_callback.setdefault(callback_name(card.request) or "parse", []).append(card)
        for callback, group in by_callback.items():
            outputs += await self._decided(group, callback, item_type, recrawl, site, job_id)
        return outputs

    async def _decided(
        self,
        cards: list[Card],
        callback: str,
        item_type: type,
        recrawl: Recrawl,
        site: str,
        job_id: str,
    ) -> list[Request | ItemSeen]:
        assert self.state is not None
        entries = [
            (
                card_key(site, item_type, card),
                card_hash({name: card.fields.get(name) for name in recrawl.card_fields}),
            )
            for card in cards
        ]
        policy = CardPolicy(recrawl.max_age_days, recrawl.refresh_runs)
        try:
            decisions = await self.state.decide(
                job_id, entries, policy, callback=callback, layout=self.layout
            )
            skips = [
                (decision.key, skipped_page(card.request, decision.card_hash))
                for card, decision in zip(cards, decisions, strict=True)
                if not decision.fetch
            ]
            # Kept for the job, unless it stopped skipping this page type meanwhile.
            if skips and not await self.state.skip(job_id, callback, skips):
                decisions = [
                    d if d.fetch else Decision(d.key, d.card_hash, UNPARSED) for d in decisions
                ]
        except _CLIENT_ERRORS as exc:
            self._count("recrawl/cards/errors")
            self._count("recrawl/cards/fetched/error", len(cards))
            self._warn(exc)
            return [card.request for card in cards]
        type_name = schema_for(item_type).item_type
        return [
            self._output(card, decision, type_name, job_id)
            for card, decision in zip(cards, decisions, strict=True)
        ]

    def _output(
        self, card: Card, decision: Decision, item_type: str, job_id: str
    ) -> Request | ItemSeen:
        request = card.request
        if decision.fetch:
            self._count(f"recrawl/cards/fetched/{decision.reason}")
            context = RecrawlContext(
                key=decision.key, card_hash=decision.card_hash, full=decision.full
            )
            request.meta[RECRAWL_META] = context
            return request
        self._count("recrawl/cards/skipped")
        return ItemSeen(
            key=decision.key,
            item_type=item_type,
            url=request.url,
            reason=CARD_UNCHANGED,
            job_id=job_id,
            # The callback that would have parsed the page (a full fetch if state is gone).
            callback=getattr(request.callback, "__name__", None) or "parse",
        )

    def _count(self, name: str, n: int = 1) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(name, n)

    def _warn(self, exc: BaseException) -> None:
        now = time.monotonic()
        if now - self._last_warning > 10:
            self._last_warning = now
            logger.warning(
                "listing cards: Redis unreachable (%s); fetching every card's page",
                type(exc).__name__,
            )


class CardsPipeline:
    """Item pipeline (390): records a complete, durable item's listing card."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.state: CardState | None = None
        self.layout = NO_BASELINE
        self._last_warning = 0.0
        self._queue: list[tuple[str, str, str, asyncio.Future[int]]] = []
        self._sender: asyncio.Task[None] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CardsPipeline:
        s = crawler.settings
        if not s.get("REDIS_URL") or not s.get("ELASTICSEARCH_URL"):
            raise not_configured("CardsPipeline", "it needs REDIS_URL and ELASTICSEARCH_URL")
        return cls(crawler)

    async def open_spider(self) -> None:
        site = site_of(self.crawler)
        self.state = CardState(CrawlServices.of(self.crawler).redis, site)
        self.layout = baseline_id(site)  # for a job the producer recorded no layout for

    async def close_spider(self) -> None:
        # The records still queued go out before the crawl's Redis client is closed.
        if self._sender is not None and not self._sender.done():
            await asyncio.shield(self._sender)

    async def process_item(self, item: Any) -> Any:
        if isinstance(item, ItemSeen):
            return item
        context = peek_context(item)
        if context is None or not context.card_hash or not context.key:
            return item
        try:
            schema = schema_for(item)
        except UnknownItemType:
            return item
        noted = noted_fields(item)
        if noted is None:
            fields = plain_fields(item)
            key = schema.key(site_of(self.crawler), fields)
        else:
            fields, key = noted
        if fields.get("incomplete"):
            return item  # a part is missing: the next run fetches it in full again
        if key != context.key:
            self._count("recrawl/cards/key_mismatch")
            logger.error("card key %s is not its item's key %s: not recorded", context.key, key)
            return item
        job_id = job_of(fields, self.crawler) or "unassigned"
        try:
            written = await self._record(job_id, key, context.card_hash)
        except _CLIENT_ERRORS as exc:
            self._count("recrawl/cards/record_errors")
            now = time.monotonic()
            if now - self._last_warning > 10:
                self._last_warning = now
                logger.warning(
                    "listing cards: not recorded (Redis: %s); their items are fetched in "
                    "full next run",
                    type(exc).__name__,
                )
            return item
        self._count("recrawl/cards/recorded", written)
        return item

    async def _record(self, job_id: str, key: str, digest: str) -> int:
        """Queue one card record; the items in flight share a Redis call per job (items
        are released together when a store bulk lands: hundreds of calls at once would
        exceed a cluster client's connections)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[int] = loop.create_future()
        self._queue.append((job_id, key, digest, future))
        if self._sender is None or self._sender.done():
            self._sender = loop.create_task(self._send_queued())
        return await future

    async def _send_queued(self) -> None:
        assert self.state is not None, "open_spider() creates the state"
        while self._queue:
            batch, self._queue = self._queue[:RECORD_BATCH], self._queue[RECORD_BATCH:]
            by_job: dict[str, list[tuple[str, str, asyncio.Future[int]]]] = {}
            for job_id, key, digest, future in batch:
                by_job.setdefault(job_id, []).append((key, digest, future))
            for job_id, entries in by_job.items():
                try:
                    written = await self.state.record(
                        job_id, [(k, h) for k, h, _ in entries], layout=self.layout
                    )
                except Exception as exc:  # handed to each waiting item, which decides
                    for _, _, future in entries:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                for n, (_, _, future) in enumerate(entries):
                    if not future.done():
                        future.set_result(written if n == 0 else 0)  # counted once

    def _count(self, name: str, n: int = 1) -> None:
        if self.crawler.stats is not None and n:
            self.crawler.stats.inc_value(name, n)
