"""A session's JavaScript challenge, passed in Chromium, and the session judged by what the
browser really did (``crawlers.fetch.sessions`` owns the sessions; this is its escalation).

A plain answer that is a challenge holds the session and fetches the same URL in Chromium
in the session's own context, then retries the request plain with the cleared session; a
rendered request waits the challenge out itself (``crawlers.fetch.challenge``). Past it,
the context's cookies become the session's; a challenge still there after
``SESSION_CHALLENGE_TIMEOUT``, a CAPTCHA or a block retires the session; every failure is
counted by what the browser ended on (``sessions/challenge_failed/<kind>``).

Reads: ``SESSION_CHALLENGE_TIMEOUT``, ``SESSION_PASS_CHALLENGES``. Details:
docs/fetching.md "Escalation: a challenge passed once, in the browser".
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from scrapy.crawler import Crawler
from scrapy.http import Request, Response

from core.sessions.store import Outcome, SessionStore
from crawlers.fetch.challenge import BrowserChallenge, ChallengeWatch
from crawlers.fetch.classify import ResponseClassifier
from crawlers.fetch.identity import IDENTITY_META, SESSION_META
from crawlers.fetch.retry import (
    CHALLENGE_META,
    CHALLENGE_PASSED_META,
    COOKIES_IN_META,
    LEDGER_SUFFIX_META,
    ROUND_METAS,
)
from crawlers.runtime.jobs import JOB_META

logger = logging.getLogger(__name__)
T = TypeVar("T")


class Sessions(Protocol):
    """What the escalation asks of the session layer (``SessionMiddleware``)."""

    crawler: Crawler
    store: SessionStore
    classifier: ResponseClassifier
    browser: ChallengeWatch

    def job_of(self, request: Request) -> str | None: ...

    async def call(self, call: Callable[[], Awaitable[T]]) -> T: ...

    async def retire(self, request: Request, session_id: str, reason: str) -> None: ...

    async def record(
        self, request: Request, session_id: str, outcome: Outcome, *, pause: float = 0.0
    ) -> None: ...


# Carried from the challenged request to its browser fetch: the job, the visitor, the
# attempt's rounds (its ledger record's name) and robots.txt's own mark (its rules are
# being fetched: RobotsTxtMiddleware must not wait for them).
_PROBE_METAS = (JOB_META, SESSION_META, IDENTITY_META, COOKIES_IN_META, "proxy")
_ROBOTS_META = "dont_obey_robotstxt"
# The session a request's retry should use first: the one that just passed its challenge
# (the retry layer drops the attempt's session; this survives it, once).
SESSION_PREFER_META = "session_prefer"


def probe_request(request: Request) -> Request:
    """The challenged request again, rendered in the session's browser context, never
    retried (the session layer judges it) and recorded in the ledger apart (``:b``)."""
    meta = {
        key: value
        for key, value in request.meta.items()
        if key in _PROBE_METAS or key in ROUND_METAS or key == _ROBOTS_META
    }
    meta.update(
        {
            "playwright": True,
            CHALLENGE_META: True,
            "dont_retry": True,
            LEDGER_SUFFIX_META: ":b",
            "handle_httpstatus_all": True,
        }
    )
    return Request(request.url, meta=meta, dont_filter=True, priority=request.priority)


class Escalation:
    def __init__(self, sessions: Sessions) -> None:
        self.sessions = sessions
        settings = sessions.crawler.settings
        # Challenges are passed in Chromium; a site that renders nothing still may.
        self.enabled = settings.getbool("SESSION_PASS_CHALLENGES")

    @property
    def stats(self) -> Any:
        return self.sessions.crawler.stats

    async def plain_challenged(self, request: Request, session_id: str) -> None:
        """A plain answer was a challenge: pass it in the browser, or retire the session."""
        self.stats.inc_value("sessions/challenges")
        if not self.enabled:
            await self.sessions.retire(request, session_id, "challenge")
            return
        if not await self.sessions.call(lambda: self.sessions.store.begin_challenge(session_id)):
            # Another request is passing it: this one is retried on another session.
            request.meta[CHALLENGE_PASSED_META] = True
            return
        probe = probe_request(request)
        response: Response | None = None
        try:
            response = await self.sessions.crawler.engine.download_async(probe)
        except Exception as exc:  # a crash or timeout of the browser: the session may live
            logger.warning(
                "passing the challenge of %s in the browser failed: %s",
                request.url,
                type(exc).__name__,
            )
        if response is None:
            await self._failed(request, session_id, "error")
            return
        result = self.sessions.browser.result(response)
        if result is None:
            # The page never showed itself to the watch (no document): judged as it came.
            verdict = self.sessions.classifier.verdict(probe, response)
            result = BrowserChallenge([], verdict, 0.0)
        if await self.browser_result(request, session_id, result, counted=True):
            request.meta[CHALLENGE_PASSED_META] = True
            request.meta[SESSION_PREFER_META] = session_id  # the retry, with its clearance

    async def browser_result(
        self, request: Request, session_id: str, result: BrowserChallenge, *, counted: bool
    ) -> bool:
        """What the session's browser did decides the session; True when it got past.
        ``counted``: the challenge was counted already (met on a plain answer)."""
        if not counted:
            self.stats.inc_value("sessions/challenges")
        if not result.passed:
            await self._failed(request, session_id, result.outcome.kind, result)
            return False
        if not result.met:
            # The browser was let through without a challenge (its context was cleared
            # already): its jar joins the session's; no challenge was passed.
            cookies = result.cookies
            await self.sessions.call(lambda: self.sessions.store.merge_cookies(session_id, cookies))
            return True
        job = self.sessions.job_of(request)
        generation = await self.sessions.call(
            lambda: self.sessions.store.challenge_passed(session_id, result.cookies, job=job)
        )
        if not generation:
            return False  # retired meanwhile (another request's verdict): nothing to keep
        self.stats.inc_value("sessions/challenges_passed")
        return True

    async def rendered_challenged(self, request: Request, session_id: str) -> None:
        """A rendered answer is still a challenge and the browser left no account of it
        (it never showed its DOM as one): the browser did not get past it."""
        self.stats.inc_value("sessions/challenges")
        await self._failed(request, session_id, "challenge")

    async def _failed(
        self,
        request: Request,
        session_id: str,
        kind: str,
        result: BrowserChallenge | None = None,
    ) -> None:
        self.stats.inc_value("sessions/challenge_failed")
        self.stats.inc_value(f"sessions/challenge_failed/{kind}")
        said = result.said if result is not None else f"ended on {kind}"
        logger.warning("session %s: the browser %s at %s", session_id, said, request.url)
        if kind == "error":
            await self.sessions.record(request, session_id, "error")
        else:
            await self.sessions.retire(request, session_id, f"challenge_{kind}")
