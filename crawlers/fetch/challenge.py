"""A rendered page that meets a JavaScript challenge waits it out in the browser.

``ChallengeWatch`` (used by ``crawlers.fetch.rendering``) records the documents a rendered
page's main frame receives and, before the spider's page methods, waits up to
``SESSION_CHALLENGE_TIMEOUT`` seconds while the page is a challenge (``core.fetch.blocks``). The
answer is the document the browser ended on; the challenges met before it are classified
and counted like any response. What the browser did (a ``BrowserChallenge``) is kept with
the response for the session layer, never in the request's meta.

Reads: ``SESSION_CHALLENGE_TIMEOUT``. Stats and how a pass is used: docs/fetching.md
"Escalation: a challenge passed once, in the browser".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Cookie, Page
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Response as PlaywrightResponse
from scrapy.crawler import Crawler
from scrapy.http import Headers, Request, Response, TextResponse
from scrapy.responsetypes import responsetypes
from scrapy_playwright.page import PageMethod

from core.fetch.blocks import BlockRules, Kind, Verdict, classify
from core.figures.ledger import ROBOTS_SUFFIX
from crawlers.fetch.classify import ResponseClassifier, is_robots_txt_fetch
from crawlers.fetch.identity import SESSION_META
from crawlers.fetch.retry import CHALLENGE_META, response_ref
from crawlers.runtime.jobs import JOB_META
from crawlers.runtime.services import CrawlServices

logger = logging.getLogger(__name__)

PAGE_METHODS_META = "playwright_page_methods"  # scrapy-playwright's
POLL = 0.25  # seconds between looks at a page running a challenge
BODY_TIMEOUT = 5.0  # seconds for the browser to hand over a document's body


@dataclass
class BrowserChallenge:
    """What a rendered request's browser met and where it ended."""

    met: list[Verdict]  # the block documents served before the last one (challenges)
    outcome: Verdict  # the verdict on the document the browser ended on
    seconds: float  # waited for the page to stop being a challenge
    cookies: list[Cookie] = field(default_factory=list)  # the context's jar after

    @property
    def passed(self) -> bool:
        """The browser got past every challenge it met to a page of the site."""
        return not self.outcome.is_block

    @property
    def said(self) -> str:
        """One phrase of what the browser did, for log lines."""
        if self.passed:
            return f"got past {len(self.met)} challenge(s) in {self.seconds:.1f}s"
        if self.outcome.kind == "challenge":
            return f"was still on a challenge after {self.seconds:.0f}s ({self.outcome.reason})"
        return f"met a {self.outcome.kind} page ({self.outcome.reason})"


@dataclass
class _Final:
    status: int
    headers: dict[str, str]
    body: bytes | None  # as served, for a document that is not HTML


class _Watch:
    """The main-frame documents one rendered request's page received, in order."""

    def __init__(self, page: Page, rules: BlockRules) -> None:
        self.page = page
        self.rules = rules
        self.documents: list[PlaywrightResponse] = []
        self.seen: dict[int, Verdict] = {}  # id(document) -> its verdict, from its DOM
        # Refusals are judged as they arrive: a challenge's script may leave its page
        # before anyone looks, and a page left is a body the browser no longer gives.
        self.judged: dict[int, asyncio.Task[Verdict | None]] = {}
        self.result: BrowserChallenge | None = None
        self.final: _Final | None = None

    def on_response(self, response: PlaywrightResponse) -> None:
        try:
            navigation = response.request.is_navigation_request()
            main = navigation and response.frame == self.page.main_frame
        except PlaywrightError:  # a service worker's response has no frame
            return
        if not main or 300 <= response.status < 400:  # a redirect is no document
            return
        self.documents.append(response)
        if response.status != 200:  # what a refusal is served with: judged now
            self.judged[id(response)] = asyncio.ensure_future(self._judge(response))

    async def _judge(self, response: PlaywrightResponse) -> Verdict | None:
        try:
            headers = await response.all_headers()
        except PlaywrightError:
            return None
        try:
            body = await asyncio.wait_for(response.body(), BODY_TIMEOUT)
        except (PlaywrightError, TimeoutError):
            # Left before it finished: what its headers say (the vendors' own names)
            verdict = classify(response.status, headers, b"", rules=self.rules)
            return verdict if verdict.kind in ("challenge", "captcha") else None
        return classify(response.status, headers, body, rules=self.rules)

    def forget(self) -> None:
        for task in self.judged.values():
            task.cancel()


class ChallengeWatch:
    """The rendering handler's watch over challenges (one per crawl)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.classifier = ResponseClassifier.of(crawler)
        self.timeout = crawler.settings.getfloat("SESSION_CHALLENGE_TIMEOUT")
        self._watches: dict[int, _Watch] = {}  # by id(request)
        self._own_methods: dict[int, Any] = {}
        self._results: weakref.WeakKeyDictionary[Response, BrowserChallenge] = (
            weakref.WeakKeyDictionary()
        )

    @classmethod
    def of(cls, crawler: Crawler) -> ChallengeWatch:
        """The crawl's one watch (a component of its services)."""
        return CrawlServices.of(crawler).component(cls)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ChallengeWatch:
        return cls(crawler)

    def result(self, response: Response) -> BrowserChallenge | None:
        """What the browser met on the way to ``response`` (None: no challenge)."""
        return self._results.get(response)

    # -- around one rendered request --------------------------------------------------
    def prepare(self, request: Request) -> None:
        """``settle`` runs before the spider's own page methods (scrapy-playwright's list
        or dict of them), so those find the page the challenge led to."""
        own = request.meta.get(PAGE_METHODS_META)
        self._own_methods[id(request)] = own
        methods = list(own.values()) if isinstance(own, dict) else list(own or ())
        request.meta[PAGE_METHODS_META] = [PageMethod(self.settle, request), *methods]

    def watch(self, page: Page, request: Request) -> None:
        """From the page init callback, before the navigation (again after a retry of
        scrapy-playwright's on a new page)."""
        self.release_page(request)
        watch = _Watch(page, self.classifier.rules)
        page.on("response", watch.on_response)
        self._watches[id(request)] = watch

    def release_page(self, request: Request) -> None:
        watch = self._watches.pop(id(request), None)
        if watch is not None:
            watch.page.remove_listener("response", watch.on_response)
            watch.forget()

    def release(self, request: Request) -> None:
        """The attempt is over: the page forgotten, the spider's page methods back."""
        self.release_page(request)
        if id(request) in self._own_methods:
            own = self._own_methods.pop(id(request))
            if own is None:
                request.meta.pop(PAGE_METHODS_META, None)
            else:
                request.meta[PAGE_METHODS_META] = own

    # -- the page method ----------------------------------------------------------------
    async def settle(self, page: Page, request: Request) -> None:
        watch = self._watches.get(id(request))
        if watch is None or not watch.documents:
            return
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + self.timeout
        # A session's browser fetch (it passes the session's challenge) always reports,
        # with the context's jar; another page only when it met a challenge.
        report = bool(request.meta.get(CHALLENGE_META))
        if len(watch.documents) == 1:
            # The usual case: the page the navigation got, still on it (a challenge
            # page's markers are in its DOM as served).
            verdict = await self._current(page, watch, deadline)
            if verdict is not None and verdict.kind != "challenge" and not report:
                return
        while True:
            verdict = await self._current(page, watch, deadline)
            if verdict is not None and verdict.kind != "challenge":
                break
            if loop.time() >= deadline:
                break
            await asyncio.sleep(POLL)
        last = watch.documents[-1]
        met = [await self._served(d, watch) for d in watch.documents[:-1]]
        met = [v for v in met if v.is_block]
        outcome = verdict or await self._served(last, watch)
        if not met and not outcome.is_block and not report:
            return  # a page that moved on by itself, no challenge in its way
        watch.result = BrowserChallenge(met, outcome, loop.time() - started)
        watch.final = await _final(last)
        with contextlib.suppress(PlaywrightError):
            watch.result.cookies = list(await page.context.cookies())

    async def _current(self, page: Page, watch: _Watch, deadline: float) -> Verdict | None:
        """The verdict on the page shown now: the last document's status and headers with
        the DOM (None while the page is navigating)."""
        document = watch.documents[-1]
        left = max(0.1, deadline - asyncio.get_running_loop().time())
        try:
            await page.wait_for_load_state("load", timeout=left * 1000)
            content = await page.content()
            headers = await document.all_headers()
        except PlaywrightError:
            return None
        if document is not watch.documents[-1]:
            return None  # a new document came meanwhile: look again
        verdict = classify(document.status, headers, content, rules=self.classifier.rules)
        watch.seen[id(document)] = verdict
        return verdict

    async def _served(self, document: PlaywrightResponse, watch: _Watch) -> Verdict:
        """The verdict on a document the page left: as its DOM was seen, else as served
        (its body, when the browser still has it). Else, a refusal's status (judged as
        it came, a challenge's script left it too fast) is a challenge; a 200 is a page
        that sent the browser on by itself (a script's redirect), no refusal."""
        seen = watch.seen.get(id(document))
        if seen is not None:
            return seen
        judged = watch.judged.get(id(document)) or asyncio.ensure_future(watch._judge(document))
        verdict = await judged
        if verdict is not None:
            return verdict
        kind: Kind = "ok" if document.status == 200 else "challenge"
        return Verdict(kind, "a page its own script left", document.status)

    # -- after the download -------------------------------------------------------------
    async def account(self, request: Request, response: Response) -> Response:
        """The response as the browser ended (status, headers, a non-HTML body as
        served), the challenges met before it counted; what the browser did kept for
        ``result(response)``."""
        watch = self._watches.get(id(request))
        if watch is None or watch.result is None:
            return response
        result = watch.result
        response = self._answer(response, watch.final)
        self._results[response] = result
        if not result.met and not result.outcome.is_block:
            return response  # a session's browser fetch that met no challenge
        stats = self.crawler.stats
        assert stats is not None
        stats.inc_value("render/challenges")
        stats.inc_value("render/challenge_wait_ms", int(result.seconds * 1000))
        if result.passed:
            stats.inc_value("render/challenges_passed")
        await self._record(request, result)
        logger.info("the browser %s at %s", result.said, request.url)
        return response

    @staticmethod
    def _answer(response: Response, final: _Final | None) -> Response:
        """The response as the document the browser ended on was served."""
        if final is None:
            return response
        headers = Headers(final.headers)
        headers.pop("Content-Encoding", None)
        body = final.body if final.body is not None else response.body
        cls = responsetypes.from_args(headers=headers, url=response.url, body=body)
        kwargs: dict[str, Any] = {}
        if final.body is None and isinstance(response, TextResponse):
            kwargs["encoding"] = response.encoding  # the DOM, as scrapy-playwright encoded it
        return cls(
            url=response.url,
            status=final.status,
            headers=headers,
            body=body,
            request=response.request,
            flags=list(response.flags),
            ip_address=response.ip_address,
            **kwargs,
        )

    async def _record(self, request: Request, result: BrowserChallenge) -> None:
        robots = is_robots_txt_fetch(request)
        for verdict in result.met:
            self.classifier.count(verdict, robots_txt=robots)
        if result.passed and result.met and not request.meta.get(SESSION_META):
            self.crawler.stats.inc_value("render/challenges_passed_unsessioned")
        ledger = CrawlServices.of(self.crawler).ledger
        job_id = request.meta.get(JOB_META)
        suffix = ""
        if not job_id and robots:
            job_id, suffix = getattr(self.crawler.spider, "job_id", None), ROBOTS_SUFFIX
        if ledger is None or not job_id:
            return
        ref = response_ref(self.crawler, request)
        for number, verdict in enumerate(result.met, 1):
            # The browser's, but not a render of its own: no RENDERED mark.
            await ledger.response(str(job_id), f"{ref}:c{number}{suffix}", verdict.kind)
        if result.passed and result.met and not request.meta.get(SESSION_META):
            # A clearance outside any session (a session's is the pool's to record).
            await ledger.session_event(str(job_id), f"passed:{ref}{suffix}")


async def _final(document: PlaywrightResponse) -> _Final | None:
    try:
        headers = await document.all_headers()
        html = "html" in headers.get("content-type", "text/html").lower()
        body = None if html else await asyncio.wait_for(document.body(), BODY_TIMEOUT)
    except (PlaywrightError, TimeoutError):
        return None
    return _Final(document.status, headers, body)
