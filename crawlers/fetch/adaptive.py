"""``RENDER_MODE = "auto"``: render only the page types that need a browser, by evidence.

Per page type (the callback that parses it) some pages are rendered as *samples* and
fetched plain as *probes*; ``AdaptiveRenderMiddleware`` (a spider middleware) compares
what the callback made of each and drops the probe's output. ``AdaptiveRendering.choose``
tells ``RenderMiddleware`` which requests to render; requests of a learning page type
are held until its verdict. The state per page type lives in ``core.fetch.render_choice``.

Reads: ``RENDER_AUTO_SAMPLE``, ``RENDER_AUTO_RECHECK``, ``RENDER_AUTO_RECHECK_AFTER``,
``RENDER_AUTO_HOLD``. What "same" means, what is sampled and the stats: docs/fetching.md
"Render only where needed (``RENDER_MODE = "auto"``)".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

from itemadapter import ItemAdapter, is_item
from scrapy.crawler import Crawler
from scrapy.http import Request, Response, TextResponse

from core.fetch.render_choice import Choice, ChoiceStore, MemoryChoiceStore, Mode, RedisChoiceStore
from crawlers.fetch.retry import CHALLENGE_META, LEDGER_SUFFIX_META
from crawlers.recrawl.context import RECRAWL_META, ItemSeen, RecrawlContext
from crawlers.runtime.logs import not_configured
from crawlers.runtime.services import CrawlServices

logger = logging.getLogger(__name__)

SAMPLE_META = "render_sample"  # rendered to be compared with a plain probe
PROBE_META = "render_probe"  # the plain half of a comparison (the sample's fingerprint)
RENDER_META = "render"  # crawlers.fetch.render_mode's explicit per-request choice
# Item fields that say when or by which job, not what the page shows.
VOLATILE_FIELDS = frozenset({"job_id", "crawled_at", "scraped_at", "fetched_at", "first_seen"})
REFRESH_EVERY = 2.0  # seconds between reads of the shared state
PROBE_PRIORITY = 100  # added to a probe's priority
_NOT_DOCUMENTS = (".json", ".xml", ".txt", ".csv", ".js", ".css")
# Request meta of one attempt (frontier lease, proxy, session, browser, retries,
# validators...), never carried over to the probe, which is a request of its own.
_ATTEMPT_META_PREFIXES = (
    "_", "playwright", "download_", "retry", "proxy", "session", "fetch_", "frontier",
    "ledger", "render", "conditional", "redirect", "challenge", "dont_", "handle_httpstatus",
)  # fmt: skip
_ATTEMPT_METAS = frozenset({"depth", "identity", "not_before", "part_retries"})
WAIT_POLL = 0.5  # seconds between looks at the shared state while requests are held


def callback_name(request: Request) -> str:
    callback = request.callback
    if callback is None:
        return "parse"
    return str(getattr(callback, "__name__", callback))


def is_document_request(request: Request) -> bool:
    """A page a person's browser would navigate to: GET, no body, asking for HTML (an
    API call says ``Accept: application/json``), not a data file."""
    if request.method not in ("GET", "HEAD") or request.body:
        return False
    accept = request.headers.get(b"Accept")
    if accept and b"html" not in accept.lower() and b"*/*" not in accept:
        return False
    path = request.url.split("?", 1)[0].split("#", 1)[0].lower()
    return not path.endswith(_NOT_DOCUMENTS)


def _normal(value: Any) -> str:
    if isinstance(value, str):
        return " ".join(value.split())
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def _filled(value: Any) -> bool:
    return value not in (None, "", [], {}, ())


def summarize(outputs: Iterable[Any]) -> dict[str, Any]:
    """What a callback made of a page: each item's filled fields (normalised values) and
    the follow-up requests (callback, URL)."""
    items: list[dict[str, str]] = []
    requests: set[tuple[str, str]] = set()
    for output in outputs:
        if isinstance(output, Request):
            requests.add((callback_name(output), output.url))
        elif is_item(output) and not isinstance(output, ItemSeen):
            fields = ItemAdapter(output).asdict()
            items.append(
                {
                    name: _normal(value)
                    for name, value in fields.items()
                    if name not in VOLATILE_FIELDS and _filled(value)
                }
            )
    items.sort(key=lambda item: json.dumps(item, sort_keys=True))
    return {"items": items, "requests": sorted(requests)}


def plain_loses_nothing(plain: Mapping[str, Any], rendered: Mapping[str, Any]) -> bool:
    """Whether plain HTTP gave everything the browser did: as many items, each with the
    browser's filled fields and values (plain may have more), every follow-up request."""
    if len(plain["items"]) != len(rendered["items"]):
        return False
    for mine, theirs in zip(plain["items"], rendered["items"], strict=True):
        if any(mine.get(name) != value for name, value in theirs.items()):
            return False
    return {tuple(r) for r in rendered["requests"]} <= {tuple(r) for r in plain["requests"]}


class AdaptiveRendering:
    """The crawl's view of which page types render (refreshed from the shared state)."""

    def __init__(self, crawler: Crawler, store: ChoiceStore) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.store = store
        self.recheck = settings.getfloat("RENDER_AUTO_RECHECK")
        self.recheck_after = settings.getfloat("RENDER_AUTO_RECHECK_AFTER")
        self.hold = settings.getfloat("RENDER_AUTO_HOLD")
        self._recheck_asked: dict[str, float] = {}
        self._choices: dict[str, Choice] = {}
        self._read_at = 0.0
        self._refreshing: asyncio.Task[None] | None = None
        self._decided = asyncio.Event()  # set (and replaced) when this worker records one

    @classmethod
    def of(cls, crawler: Crawler) -> AdaptiveRendering:
        """The crawl's one instance (a component of its services)."""
        return CrawlServices.of(crawler).component(cls)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> AdaptiveRendering:
        settings = crawler.settings
        site = crawler.spidercls.name
        sample = settings.getint("RENDER_AUTO_SAMPLE")
        # A sample not compared within the hold is taken as lost: another may start.
        stale = settings.getfloat("RENDER_AUTO_HOLD")
        store: ChoiceStore
        if settings.get("REDIS_URL"):
            store = RedisChoiceStore(CrawlServices.of(crawler).redis, site, sample, stale)
        else:
            store = MemoryChoiceStore(site, sample, stale)
        return cls(crawler, store)

    def mode(self, callback: str) -> Mode:
        self._maybe_refresh()
        choice = self._choices.get(callback)
        return choice.mode if choice is not None else "learning"

    async def choose(self, request: Request) -> bool:
        """Whether ``request`` is rendered; a sample is marked (``SAMPLE_META``)."""
        if not is_document_request(request) or request.meta.get(PROBE_META):
            return False
        callback = callback_name(request)
        mode = self.mode(callback)
        if request.meta.get(SAMPLE_META):
            # Chosen as a sample when its callback yielded it (``hold``): while learning,
            # rendered; decided meanwhile, it goes as the verdict says.
            if mode == "learning":
                return True
            request.meta.pop(SAMPLE_META)
        if mode == "learning":
            if await self._known_same(request, callback):
                return False
            # Rendered until the answer is known (its items are the browser's); the
            # first pages are the samples.
            if await self.store.start_probe(callback):
                request.meta[SAMPLE_META] = True
            return True
        if mode == "render":
            # Checked the other way now and then: a plain fetch beside a render is cheap.
            if random.random() < self.recheck:
                request.meta[SAMPLE_META] = True
            return True
        if await self._recheck_due(callback):
            request.meta[SAMPLE_META] = True
            return True
        return False

    def fingerprint(self, request: Request) -> str:
        return self.crawler.request_fingerprinter.fingerprint(request).hex()

    async def _known_same(self, request: Request, callback: str) -> bool:
        """This very page was found the same both ways while its type learns, less than
        ``RENDER_AUTO_RECHECK_AFTER`` ago (the next job's start page): plain, no sample."""
        return await self.store.agreed(callback, self.fingerprint(request), self.recheck_after)

    async def _recheck_due(self, callback: str) -> bool:
        """A plain page type is compared again once its last comparison is
        ``RENDER_AUTO_RECHECK_AFTER`` seconds old (one page, claimed in the shared state):
        a check of a plain type costs a browser, a hundred plain pages."""
        choice = self._choices.get(callback)
        if choice is None or time.time() - choice.checked < self.recheck_after:
            return False
        now = time.monotonic()
        if now - self._recheck_asked.get(callback, 0.0) < REFRESH_EVERY:
            return False
        self._recheck_asked[callback] = now
        return await self.store.start_recheck(callback, self.recheck_after)

    async def holds(self, request: Request) -> bool:
        """Whether a request a callback yielded waits for its page type's verdict: a page
        of a learning type beyond its samples (a sample is marked and goes out now)."""
        if (
            not is_document_request(request)
            or request.meta.get(PROBE_META)
            or request.meta.get(RENDER_META) is not None
            or request.meta.get(SAMPLE_META)
        ):
            return False
        callback = callback_name(request)
        if self.mode(callback) != "learning" or await self._known_same(request, callback):
            return False
        if await self.store.start_probe(callback):
            request.meta[SAMPLE_META] = True
            return False
        return True

    async def settled(self, callbacks: set[str]) -> bool:
        """Wait until none of ``callbacks`` is learning (True), or ``hold`` seconds
        (False); the shared state is read every ``WAIT_POLL`` seconds meanwhile."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.hold
        while True:
            if all(self.mode(callback) != "learning" for callback in callbacks):
                return True
            left = deadline - loop.time()
            if left <= 0:
                return False
            decided = self._decided
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(decided.wait(), min(WAIT_POLL, left))
            if not decided.is_set():
                await self._refresh()  # another worker's verdict

    def _maybe_refresh(self) -> None:
        if time.monotonic() - self._read_at < REFRESH_EVERY:
            return
        if self._refreshing is None or self._refreshing.done():
            self._read_at = time.monotonic()
            self._refreshing = asyncio.ensure_future(self._refresh())

    async def _refresh(self) -> None:
        try:
            self._choices = await self.store.choices()
        except Exception as exc:  # Redis away: keep the last known choices
            logger.debug("render choices not refreshed: %s", type(exc).__name__)

    async def record(self, callback: str, same: bool, page: str = "") -> Choice:
        choice = await self.store.record(callback, same, page)
        known = self._choices.get(callback)
        self._choices[callback] = choice
        self._decided.set()
        self._decided = asyncio.Event()
        if known is None or known.mode != choice.mode:
            logger.info(
                "page type %s: %s (plain HTTP %s)",
                callback,
                choice.mode,
                "loses nothing" if same else "misses what the browser gets",
            )
        return choice


class AdaptiveRenderMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.adaptive = AdaptiveRendering.of(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> AdaptiveRenderMiddleware:
        if crawler.settings.get("RENDER_MODE") != "auto":
            raise not_configured("AdaptiveRenderMiddleware", "RENDER_MODE is not auto")
        return cls(crawler)

    @property
    def stats(self) -> Any:
        return self.crawler.stats

    def _eligible(self, response: Response) -> bool:
        request = response.request
        return (
            request is not None
            and response.status == 200
            and isinstance(response, TextResponse)
            and b"html" in (response.headers.get(b"Content-Type") or b"text/html").lower()
            and is_document_request(request)
            and not request.meta.get(CHALLENGE_META)
        )

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        request = response.request
        assert request is not None
        probe_of = request.meta.get(PROBE_META)
        if probe_of is not None:
            outputs = [output async for output in result]  # the probe's: compared, dropped
            await self._compare(request, str(probe_of), outputs)
            return
        sampled = bool(request.meta.get(SAMPLE_META)) and _rendered(response)
        sampled = sampled and self._eligible(response)
        outputs = []
        held: list[Request] = []
        async for output in result:
            if sampled:
                outputs.append(output)
            if isinstance(output, Request) and await self.adaptive.holds(output):
                held.append(output)
                continue
            yield output
        if sampled:
            ref = self.adaptive.fingerprint(request)
            await self.adaptive.store.put_summary(ref, json.dumps(summarize(outputs)))
            self.stats.inc_value("render/auto/probes")
            yield self._probe(request, ref)  # before the held ones wait: their verdict
        if held:
            self.stats.inc_value("render/auto/held", len(held))
            if not await self.adaptive.settled({callback_name(r) for r in held}):
                self.stats.inc_value("render/auto/hold_expired", len(held))
            for output in held:
                yield output

    def _probe(self, request: Request, ref: str) -> Request:
        """The sampled request again, plain, with nothing of the sample's attempt."""
        meta = {
            key: value
            for key, value in request.meta.items()
            if not key.startswith(_ATTEMPT_META_PREFIXES) and key not in _ATTEMPT_METAS
        }
        meta.update(
            {
                PROBE_META: ref,
                RENDER_META: False,
                LEDGER_SUFFIX_META: ":a",
                # Fetched whole: validators would make it a 304 with nothing to compare.
                RECRAWL_META: RecrawlContext(full=True),
            }
        )
        # Ahead of the queue: the page type's verdict waits for it.
        return request.replace(
            meta=meta, headers={}, dont_filter=True, priority=request.priority + PROBE_PRIORITY
        )

    async def _compare(self, request: Request, ref: str, outputs: list[Any]) -> None:
        stored = await self.adaptive.store.take_summary(ref)
        if stored is None:
            return  # compared already (a re-delivered probe), or expired
        same = plain_loses_nothing(summarize(outputs), json.loads(stored))
        callback = callback_name(request)
        self.stats.inc_value(f"render/auto/{'same' if same else 'differ'}")
        choice = await self.adaptive.record(callback, same, ref)
        self.stats.set_value(f"render/auto/mode/{callback}", choice.mode)


def _rendered(response: Response) -> bool:
    return "playwright" in response.flags
