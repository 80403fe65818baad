"""Store: items into Elasticsearch through ``core.store.ItemStore`` (bulk, durable).

Reads ``ELASTICSEARCH_URL`` (off without it) and the verdicts of the dedup pipeline before
it. ``process_item`` returns only once the item is durable (accepted by Elasticsearch or
in the spill): the frontier acks a lease after its items went through the pipelines, so a
killed worker loses nothing. Seen-unchanged items are stored as touches; credentials,
rejected items, a store that can neither write nor spill and local mode's jobs document:
docs/pipelines.md ("Storage in Elasticsearch", "Durability", "How a crawl ends").
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import shlex
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from elastic_transport import TransportError
from elasticsearch import ApiError
from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem
from scrapy.settings import BaseSettings
from scrapy.utils.defer import deferred_from_coro

from core.config import ConfigurationError
from core.es_access import AUTH_REFUSED
from core.figures.ledger import JobLedger
from core.items_schema import UnknownItemType
from core.jobs.index import write_job_document_async
from core.jobs.outcome import STORE_FAILED, STORE_FAILURE, STORED, exit_code, judge
from core.store import (
    DeadLettered,
    FileSpill,
    ItemStore,
    MissingSetting,
    Outcome,
    RedisSpill,
    Spill,
    StoreAction,
    StoreSettings,
    build_action,
    build_touch,
)
from crawlers.frontier.scheduler import frontier_enabled
from crawlers.items import schema_for
from crawlers.pipelines.common import refetch, report_auth_refused
from crawlers.recrawl.context import ItemSeen
from crawlers.runtime.item_context import DedupNote, find_context
from crawlers.runtime.jobs import job_of, site_of
from crawlers.runtime.logs import not_configured
from crawlers.runtime.outcome import OUTCOME_STAT
from crawlers.runtime.services import CrawlServices

logger = logging.getLogger(__name__)


def spill_dir(settings: BaseSettings) -> Path:
    """Where a worker without Redis spills: ``STORE_SPILL_DIR``, else under the run dir."""
    configured = settings.get("STORE_SPILL_DIR")
    if configured:
        return Path(configured)
    run_dir = settings.get("PLATFORM_RUN_DIR")
    if not run_dir:
        raise MissingSetting("STORE_SPILL_DIR or PLATFORM_RUN_DIR must be set (file spill)")
    return Path(run_dir) / "spill"


def check_spill_dir(settings: BaseSettings) -> None:
    """ConfigurationError (one line, exit 2) when a crawl that would spill to files
    (Elasticsearch without Redis) cannot create or write its spill directory: found at
    start, not by the first item that needs the spill."""
    if settings.get("REDIS_URL") or not settings.get("ELASTICSEARCH_URL"):
        return
    directory = spill_dir(settings)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".write-check-"):
            pass
    except OSError as exc:
        name = "STORE_SPILL_DIR" if settings.get("STORE_SPILL_DIR") else "PLATFORM_RUN_DIR"
        raise ConfigurationError(
            f"the store's spill directory {directory} ({name}) cannot be written "
            f"({exc.strerror or type(exc).__name__}): items Elasticsearch does not take "
            "wait there; make it writable or set STORE_SPILL_DIR to a writable directory"
        ) from None


def verdict_of(item: Any) -> DedupNote | None:
    """Dedup's verdict, from the item's context."""
    context = find_context(item)
    return context.verdict if context is not None else None


class StorePipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        s = crawler.settings
        self.services = CrawlServices.of(crawler)
        if not self.services.redis_url:
            check_spill_dir(s)
        self.spill_dir = None if self.services.redis_url else spill_dir(s)
        self.settings = StoreSettings.from_settings(s)
        self.store: ItemStore | None = None
        self._spilled_items = 0  # items (not extra actions) whose put() spilled them
        job_doc = s.get("STORE_JOB_DOCUMENT_AT_CLOSE")
        self.job_document_at_close = (
            not frontier_enabled(s) if job_doc is None else s.getbool("STORE_JOB_DOCUMENT_AT_CLOSE")
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StorePipeline:
        if not crawler.settings.get("ELASTICSEARCH_URL"):
            raise not_configured("StorePipeline", "it needs ELASTICSEARCH_URL")
        if not CrawlServices.of(crawler).verdicts:
            # Configuration error, not an optional feature: fail the crawl loudly.
            raise RuntimeError(
                "StorePipeline stores dedup's verdicts: enable "
                "crawlers.pipelines.dedup.DedupPipeline before it in ITEM_PIPELINES"
            )
        pipeline = cls(crawler)
        crawler.signals.connect(pipeline.spider_closed, signal=signals.spider_closed)
        return pipeline

    async def open_spider(self) -> None:
        site = site_of(self.crawler)
        # The crawl's clients (CrawlServices), built in the running event loop.
        spill: Spill
        on_stored = None
        if self.services.redis_url:
            server = self.services.redis
            spill = RedisSpill(server, site, lock_timeout=self.settings.spill_lock_seconds)
            on_stored = JobLedger(server, site).stored
        else:
            assert self.spill_dir is not None
            spill = FileSpill(self.spill_dir / f"{site}.jsonl")
        self.store = ItemStore(
            self.services.es,
            spill,
            settings=self.settings,
            on_count=self._count,
            on_stored=on_stored,
            on_auth=self._auth_refused,
            on_failed=self._store_failed,
        )
        if self.crawler.stats is not None:
            self.crawler.stats.set_value(STORED, 0)  # a store is on: items stored, counted
        await self.store.start()
        logger.info(
            "storing into Elasticsearch (bulk %d, window %.1fs, spill: %s)",
            self.settings.bulk_size,
            self.settings.flush_interval,
            spill.description,
        )

    async def process_item(self, item: Any) -> Any:
        assert self.store is not None, "open_spider() creates the store"
        if isinstance(item, ItemSeen):
            return await self._touch(item)
        action = self._action_for(item)
        await self._put_extra(item)
        try:
            outcome = await self.store.put(action)
        except DeadLettered as exc:
            raise self._rejected(f"Elasticsearch rejected {action.key}", exc) from None
        self._counted(outcome)
        return item

    def _rejected(self, what: str, exc: DeadLettered) -> DropItem:
        """The drop of an item Elasticsearch rejected for good: said at WARNING for the
        first of its cause (kept for the crawl's outcome line), the others at DEBUG."""
        stats = self.crawler.stats
        if not exc.repeated and stats is not None and not stats.get_value(STORE_FAILURE):
            stats.set_value(STORE_FAILURE, str(exc))
        return DropItem(
            f"{what} (kept in dead letters): {exc}", log_level="DEBUG" if exc.repeated else None
        )

    def _counted(self, outcome: Outcome) -> None:
        """``items/stored`` (the crawl's own count); spilled items wait for the close."""
        if outcome == Outcome.SPILLED:
            self._spilled_items += 1
        elif outcome != Outcome.MISSING:
            self._count(STORED, 1)

    async def _touch(self, item: ItemSeen) -> ItemSeen:
        """The touch of a seen item's document; gone: its page is fetched in full."""
        assert self.store is not None
        note = verdict_of(item)
        if note is None:
            raise RuntimeError(f"no dedup verdict for the ItemSeen of {item.key}")
        action = build_touch(
            site=site_of(self.crawler),
            item_type=item.item_type,
            key=note.key,
            job_id=job_of({"job_id": item.job_id}, self.crawler),
            seen_ms=note.state.seen_ms,
        )
        await self._put_extra(item)
        try:
            outcome = await self.store.put(action)
        except DeadLettered as exc:
            raise self._rejected(f"Elasticsearch rejected the touch of {action.key}", exc) from None
        self._counted(outcome)
        if outcome == Outcome.MISSING:
            # Not counted from the ItemSeen: its item is counted when fetched in full.
            if note.unsee is not None:
                await note.unsee()
            raise refetch(self.crawler, item, "document_missing")
        return item

    async def _put_extra(self, item: Any) -> None:
        """The actions another component left for ``item``, durable before it is."""
        assert self.store is not None
        context = find_context(item)
        if context is None or not context.store_extra:
            return
        # Taken: an item processed again (a retry) does not write them twice.
        extra, context.store_extra = context.store_extra, []
        outcomes = await asyncio.gather(*(self.store.put(a) for a in extra), return_exceptions=True)
        for outcome in outcomes:
            # A dead letter is kept (and logged, counted) by the writer; the item goes on.
            if isinstance(outcome, BaseException) and not isinstance(outcome, DeadLettered):
                raise outcome

    def _action_for(self, item: Any) -> StoreAction:
        try:
            schema = schema_for(item)
        except UnknownItemType as exc:
            raise DropItem(f"cannot store: {exc}") from None
        note = verdict_of(item)
        if note is None:
            # Dedup passes every item of a known type on with a note, or fails it.
            raise RuntimeError(f"no dedup verdict for a {schema.item_type} item")
        state = note.state
        return build_action(
            site=site_of(self.crawler),
            item_type=schema.item_type,
            key=note.key,
            fields=note.fields,
            job_id=job_of(note.fields, self.crawler),
            content_hash=state.content_hash,
            seen_ms=state.seen_ms,
            first_seen_ms=state.first_seen_ms,
            last_changed_ms=state.last_changed_ms,
        )

    async def close_spider(self) -> None:
        if self.store is not None:
            report = await self.store.close()
            if report.spill_remaining:
                spill = self.store.spill
                spill_file = spill.path if isinstance(spill, FileSpill) else None
                logger.warning(
                    "%d items wait in the spill (%s) for Elasticsearch; %s`%s` stores them",
                    report.spill_remaining,
                    spill.description if spill is not None else "none",
                    "" if spill_file else "any worker of the site or ",
                    drain_command(site_of(self.crawler), self.crawler.settings, spill_file),
                )
            stats = self.crawler.stats
            if report.spill_remaining is not None and stats is not None:
                stats.set_value("store/spill_remaining_at_close", report.spill_remaining)
            if report.spill_remaining == 0:
                # The spill is empty: what this crawl spilled was stored since.
                self._count(STORED, self._spilled_items)
                self._spilled_items = 0

    async def spider_closed(self, spider: Spider, reason: str) -> None:
        if not self.job_document_at_close or self.crawler.stats is None:
            return
        stats = self.crawler.stats.get_stats()
        counters = {
            name: value
            for name, value in stats.items()
            if isinstance(value, int) and not isinstance(value, bool)
        }
        started = stats.get("start_time")
        # The crawl's verdict (crawlers.runtime.outcome: finish_reason, outcome), else
        # judged here (the outcome extension is off).
        outcome = judge(stats, reason=reason)
        reason = str(stats.get("finish_reason") or outcome.reason)
        line = str(stats.get(OUTCOME_STAT) or outcome.line)
        # The same words as the orchestration flow's report step; a budget reached with
        # items stored completed (its reason says which budget).
        status = "completed" if exit_code(reason) == 0 else "failed"
        try:
            # The crawl's one client: the services close it when the engine stops, after
            # this signal.
            await write_job_document_async(
                self.services.es,
                spider.name,
                str(getattr(spider, "job_id", "unassigned")),
                status,
                started if isinstance(started, dt.datetime) else None,
                dt.datetime.now(tz=dt.UTC),
                counters,
                spill_remaining=stats.get("store/spill_remaining_at_close"),
                extra={"close_reason": reason, "mode": "local"},
                close_reason=reason,
                outcome=line,
            )
        except (TransportError, ApiError, OSError) as exc:
            # The crawl's items are safe either way; the history entry is best effort.
            # Elasticsearch down at close: one line (the spill's line says what waits).
            logger.error("could not write the job document (%s: %s)", type(exc).__name__, exc)
        except Exception:
            logger.exception("could not write the job document")

    def _auth_refused(self, exc: ApiError) -> None:
        """Elasticsearch's security refused a write: one line per crawl; a 401 closes the
        crawl (nothing more can be stored: the spill keeps what was scraped)."""
        status = exc.meta.status
        consequence = (
            "scraped items wait in the spill"
            if status == AUTH_REFUSED
            else "its writes go to the dead letters"
        )
        report_auth_refused(self.crawler, status, self.services.es_kwargs, consequence)

    def _store_failed(self, line: str) -> None:
        """The writer gave items up (neither written nor spilled in time): the crawl
        closes (``store_failed``), the line kept for its outcome."""
        if self.crawler.stats is not None:
            self.crawler.stats.set_value(STORE_FAILURE, line)
        engine = self.crawler.engine
        if engine is not None and engine.spider is not None:
            deferred_from_coro(engine.close_spider_async(reason=STORE_FAILED)).addErrback(
                lambda failure: logger.error("closing the crawl failed: %s", failure.value)
            )

    def _count(self, name: str, n: int) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(name, n)


URL_OPTIONS = (("--redis-url", "REDIS_URL"), ("--elasticsearch-url", "ELASTICSEARCH_URL"))


def drain_command(site: str, settings: BaseSettings, spill_file: Path | None = None) -> str:
    """The shell command that drains what a crawl with ``settings`` left in its spill.

    It names the connections the crawl used (so it works from a shell without the crawl's
    ``-s`` options), except a URL that carries a password: that one is a secret, read
    from the environment as the crawl did. ``spill_file``: the file spill (no Redis).
    """
    argv = ["python", "-m", "crawlers.cli.spill", "drain", site]
    for option, name in URL_OPTIONS:
        url = settings.get(name)
        if url and urlsplit(str(url)).password is None:
            argv += [option, str(url)]
    if spill_file is not None:
        argv += ["--spill-file", str(spill_file)]
    return shlex.join(argv)
