"""Conditional requests: an item page unchanged since its last full fetch answers 304.

``ConditionalRequests`` (a downloader middleware) sends an item request the validators of
its URL's last complete, durable 200 answer (``SiteKeys.page_validators`` in Redis, written
by ``RecrawlRecordPipeline``); a 304 becomes an ``ItemSeen`` (``not_modified``), never
parsed; a 200's validators go into its ``RecrawlContext``. Redis unreachable: the request
goes unconditional. A record is used only under the layout it was made under and while
the job met no unparsed page of its callback.

Reads: the profile's ``[recrawl] item_callbacks``, ``REDIS_URL``. Rules and stats:
docs/recrawl.md "Conditional requests (ETag / Last-Modified / 304)".
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from redis.typing import EncodableT, FieldT
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from core.keys import REDIS_ERRORS, SiteKeys
from core.recrawl.layouts import baseline_id
from core.redis_client import AsyncClient
from crawlers.recrawl.context import RECRAWL_META, ItemSeen, RecrawlContext
from crawlers.recrawl.unparsed import UnparsedWatch, callback_name
from crawlers.runtime.jobs import JOB_META
from crawlers.runtime.logs import not_configured
from crawlers.runtime.services import CrawlServices

logger = logging.getLogger(__name__)

# request.meta: the record whose validators the request carries (and for which URL).
CONDITIONAL_META = "conditional_validators"
_STATS = "recrawl/conditional/"


@dataclass(frozen=True)
class PageValidators:
    """What an item page's last complete 200 left: its validators, its item, and the
    layout it was parsed under (``core.recrawl.layouts``; None: recorded before layouts were kept,
    which no layout matches)."""

    etag: str | None
    last_modified: str | None
    key: str
    item_type: str
    layout: str | None = None

    def to_json(self) -> str:
        data = {name: value for name, value in dataclasses.asdict(self).items() if value}
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, raw: bytes | str) -> PageValidators | None:
        """None for a record that is not one (never a reason to fail a request)."""
        try:
            data = json.loads(raw)
            record = cls(
                data.get("etag"),
                data.get("last_modified"),
                data["key"],
                data["item_type"],
                data.get("layout"),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
        return record if record.etag or record.last_modified else None


@dataclass(frozen=True)
class Lookup:
    """A URL's record, and the callbacks its job stopped skipping (unparsed pages)."""

    record: PageValidators | None
    unparsed: frozenset[str] = frozenset()


class ValidatorStore:
    """The site's ``page_validators`` hash: coalesced reads, pipelined writes.

    ``get`` calls made while a lookup is in flight are sent together in the next one
    (as ``core.dedup.detector.ChangeState`` batches classifications), with each job's set of
    callbacks it stopped skipping (``crawlers.recrawl.unparsed``) in the same round trip."""

    def __init__(self, server: AsyncClient, site: str, max_batch: int = 500) -> None:
        self.server = server
        self.keys = SiteKeys(site)
        self.key = self.keys.page_validators
        self.max_batch = max(1, max_batch)
        self._queue: list[tuple[str, str, asyncio.Future[Lookup]]] = []
        self._sender: asyncio.Task[None] | None = None
        self._layouts: dict[str, str] = {}

    async def get(self, url: str, job_id: str) -> Lookup:
        """The URL's record (Redis errors propagate to the caller)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Lookup] = loop.create_future()
        self._queue.append((url, job_id, future))
        if self._sender is None or self._sender.done():
            self._sender = loop.create_task(self._send_queued())
        return await future

    async def job_layout(self, job_id: str, own: str) -> str:
        """The layout of the job's records: the producer's (``core.recrawl.layouts``), else
        ``own`` (this worker's); read once per job."""
        layout = self._layouts.get(job_id)
        if layout is None:
            raw = await self.server.get(self.keys.job_layout(job_id))
            layout = self._layouts[job_id] = own if raw is None else _text(raw)
        return layout

    async def _send_queued(self) -> None:
        while self._queue:
            batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
            jobs = sorted({job_id for _, job_id, _ in batch})
            try:
                pipe = self.server.pipeline(transaction=False)
                pipe.hmget(self.key, [url for url, _, _ in batch])
                for job_id in jobs:
                    pipe.smembers(self.keys.job_unparsed(job_id))
                raws, *stopped = await pipe.execute()
            except Exception as exc:  # every waiter gets it: each decides what it means
                for _, _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            unparsed = {
                job: frozenset(_text(name) for name in names)
                for job, names in zip(jobs, stopped, strict=True)
            }
            for (_, job_id, future), raw in zip(batch, raws, strict=True):
                if not future.done():
                    record = None if raw is None else PageValidators.from_json(raw)
                    future.set_result(Lookup(record, unparsed[job_id]))

    async def write(self, records: Mapping[str, PageValidators | None]) -> None:
        """Set (a record) or delete (None) each URL's validators, in one round trip."""
        sets: dict[FieldT, EncodableT] = {
            url: record.to_json() for url, record in records.items() if record is not None
        }
        deletes = [url for url, record in records.items() if record is None]
        pipe = self.server.pipeline(transaction=False)
        if sets:
            pipe.hset(self.key, mapping=sets)
        if deletes:
            pipe.hdel(self.key, *deletes)
        if sets or deletes:
            await pipe.execute()


def validator_store(crawler: Crawler, site: str) -> ValidatorStore:
    """A store on the crawl's Redis client (``CrawlServices``: closed by it)."""
    server = CrawlServices.of(crawler).redis
    return ValidatorStore(server, site, crawler.settings.getint("RECRAWL_CONDITIONAL_BATCH"))


def not_modified_item(
    record: PageValidators, url: str, job_id: str | None, callback: str | None
) -> ItemSeen:
    """The ``ItemSeen`` of a 304, with the callback that would have parsed the page (for
    a full fetch if the item's state turns out to be gone)."""
    return ItemSeen(
        key=record.key,
        item_type=record.item_type,
        url=url,
        reason="not_modified",
        job_id=job_id,
        callback=callback or "parse",
    )


def yield_seen(response: Response, seen: ItemSeen) -> Iterator[ItemSeen]:
    """The callback of a 304's request: the item seen, its page not parsed."""
    yield seen


class ConditionalRequests:
    """Downloader middleware: validators on item requests, 304s turned into ``ItemSeen``."""

    def __init__(self, crawler: Crawler, item_callbacks: frozenset[str]) -> None:
        self.crawler = crawler
        self.item_callbacks = item_callbacks
        spider = crawler.spider
        assert spider is not None
        self.site = str(spider.name)
        self.spider_statuses = list(getattr(spider, "handle_httpstatus_list", ()))
        self.layout = baseline_id(self.site)  # for a job the producer recorded none for
        self.watch = CrawlServices.of(crawler).component(UnparsedWatch)
        self._store: ValidatorStore | None = None
        self._last_warning = 0.0
        # RECRAWL_CONDITIONAL false: nothing is sent conditionally (a full re-crawl), but
        # the answers' validators are still recorded for the next crawl.
        self.send = crawler.settings.getbool("RECRAWL_CONDITIONAL")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ConditionalRequests:
        if not crawler.settings.get("REDIS_URL"):
            raise not_configured("ConditionalRequests", "validators are kept in Redis")
        profile = getattr(crawler.spider, "profile", None)
        recrawl = getattr(profile, "recrawl", None)
        if recrawl is None or not recrawl.conditional or not recrawl.item_callbacks:
            raise not_configured(
                "ConditionalRequests", "no [recrawl] item_callbacks, or conditional off"
            )
        middleware = cls(crawler, frozenset(recrawl.item_callbacks))
        return middleware

    @property
    def store(self) -> ValidatorStore:
        if self._store is None:  # created in the running event loop its client binds to
            self._store = validator_store(self.crawler, self.site)
        return self._store

    def _count(self, name: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(_STATS + name)

    def _is_item_request(self, request: Request) -> bool:
        return callback_name(request) in self.item_callbacks

    # -- requests ---------------------------------------------------------------------
    async def process_request(self, request: Request) -> None:
        sent = request.meta.get(CONDITIONAL_META)
        if sent is not None:
            if sent[0] == request.url:
                return  # a retry of a conditional request: its validators still apply
            self._strip(request)  # a redirect: the validators were another URL's
        if not self._is_item_request(request) or request.meta.get("playwright"):
            return  # a rendered page is never conditional (the browser fetches it whole)
        context = request.meta.get(RECRAWL_META)
        if not self.send or (isinstance(context, RecrawlContext) and context.full):
            return  # fetched whole; its validators are still noted from the answer
        job_id = str(request.meta.get(JOB_META) or self.watch.job_of(request))
        callback = callback_name(request)
        if self.watch.stopped(job_id, callback):
            self._count("unparsed")
            return
        try:
            lookup = await self.store.get(request.url, job_id)
            layout = await self.store.job_layout(job_id, self.layout)
        except REDIS_ERRORS as exc:
            self._count("lookup_failed")
            self._warn(exc)
            return
        record = lookup.record
        if record is None:
            return
        if callback in lookup.unparsed:  # the job met pages of this kind it could not parse
            self._count("unparsed")
            return
        if record.layout != layout:  # parsed under another accepted baseline: void
            self._count("layout_changed")
            return
        if record.etag:
            request.headers[b"If-None-Match"] = record.etag
        if record.last_modified:
            request.headers[b"If-Modified-Since"] = record.last_modified
        request.meta[CONDITIONAL_META] = (request.url, record)
        statuses = request.meta.get("handle_httpstatus_list", self.spider_statuses)
        request.meta["handle_httpstatus_list"] = [*dict.fromkeys([*statuses, 304])]
        request.meta["dont_cache"] = True
        self._count("sent")

    @staticmethod
    def _strip(request: Request) -> None:
        request.meta.pop(CONDITIONAL_META, None)
        request.headers.pop(b"If-None-Match", None)
        request.headers.pop(b"If-Modified-Since", None)

    def _warn(self, exc: BaseException) -> None:
        now = asyncio.get_running_loop().time()
        if now - self._last_warning > 10:
            self._last_warning = now
            logger.warning(
                "page validators unreachable (%s); item pages are fetched unconditionally",
                type(exc).__name__,
            )

    # -- responses --------------------------------------------------------------------
    def process_response(self, request: Request, response: Response) -> Response:
        sent = request.meta.get(CONDITIONAL_META)
        if response.status == 304 and sent is not None and sent[0] == request.url:
            self._count("not_modified")
            return self._seen(request, response, sent[1])
        if response.status == 200 and self._is_item_request(request):
            if sent is not None:
                self._count("modified")
            self._note_validators(request, response)
        return response

    def _seen(self, request: Request, response: Response, record: PageValidators) -> Response:
        job_id = request.meta.get(JOB_META)
        seen = not_modified_item(
            record, request.url, str(job_id) if job_id else None, callback_name(request)
        )
        return response.replace(
            request=request.replace(callback=yield_seen, cb_kwargs={"seen": seen})
        )

    @staticmethod
    def _note_validators(request: Request, response: Response) -> None:
        """The page's validators into its context: the latest 200 wins (a block page
        answered 200 and then retried leaves nothing behind)."""
        etag = _header(response, b"ETag")
        last_modified = _header(response, b"Last-Modified")
        context = request.meta.get(RECRAWL_META)
        if not isinstance(context, RecrawlContext):
            if etag is None and last_modified is None:
                return
            context = request.meta[RECRAWL_META] = RecrawlContext()
        context.url = request.url
        context.etag = etag
        context.last_modified = last_modified


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1").strip() or None if value else None
