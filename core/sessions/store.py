"""Fetch sessions shared by every worker of a site: identity, proxy, cookies, usage, health.

A session is one visitor as a bot defense sees it (one browser identity, one proxy, one
cookie jar). The pool hands out sessions within a rate budget, probes new ones one
request at a time, holds one whose challenge is being passed, and retires a session on a
block or CAPTCHA, too many errors, uses or seconds; each step is recorded in the job's
ledger in the same atomic step. ``mark_defended`` keeps a site's first defense for
``DEFENSE_TTL``. Storage is a ``SessionStore``: ``core.sessions.redis_store.RedisSessionStore``
(Lua, Redis' clock, Cluster safe) or ``MemorySessionStore`` here. No Scrapy here.

Reads: the pool's limits from its caller (``SESSION_*`` settings via
``crawlers.fetch.sessions``). Rules: docs/fetching.md "Sessions: one visitor per session,
shared by every worker".
"""

from __future__ import annotations

import abc
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Outcome = Literal["ok", "error", "throttled"]
RETIRED_TTL = 86_400  # seconds a retired session's record is kept, for forensics
DEFENSE_TTL = 7 * 86_400  # seconds a site stays known as defended after its last block
SCAN_LIMIT = 64  # sessions looked at per acquire (past the budget ones are retired first)


@dataclass(frozen=True)
class SessionPolicy:
    """A site's session budget (the ``SESSION_*`` settings, chosen by its profile)."""

    max_sessions: int = 8
    interval: float = 0.5  # seconds between two requests of one session (1 / rate)
    max_uses: int = 0  # 0: no limit
    max_age: float = 0.0  # seconds; 0: no limit
    max_errors: int = 3
    hold: float = 120.0  # seconds a probe or a challenge holds a session at most

    def __post_init__(self) -> None:
        if self.max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        if self.interval < 0 or self.max_uses < 0 or self.max_age < 0 or self.hold <= 0:
            raise ValueError("session budgets must not be negative (hold above 0)")
        if self.max_errors < 1:
            raise ValueError("max_errors must be at least 1")


@dataclass
class Session:
    """One visitor of the site, as handed out by the pool for one request."""

    id: str
    identity: dict[str, Any]  # a BrowserIdentity's dict (crawlers.fetch.identity)
    proxy: str  # host:port, "" for a direct connection
    cookies: list[dict[str, Any]] = field(default_factory=list)
    generation: int = 0
    # True: this request is the session's probe (its first answer decides its state).
    probe: bool = False
    errors: int = 0  # its error score when handed out (a good answer of a session at 0
    # changes nothing: the caller need not record it)


@dataclass(frozen=True)
class Wait:
    """No session may be used now: the earliest is free in ``seconds``."""

    seconds: float


@dataclass(frozen=True)
class Retired:
    """A session retired (by this call or one before it that the caller should count)."""

    id: str
    reason: str


def new_session_id() -> str:
    return secrets.token_hex(6)


def cookie_key(cookie: Mapping[str, Any]) -> str:
    """A cookie's identity in a jar: name, domain and path (RFC 6265 5.3 step 11)."""
    return f"{cookie.get('name', '')};{cookie.get('domain', '')};{cookie.get('path', '/')}"


class SessionStore(abc.ABC):
    """The pool of one site's sessions. Every call is one atomic step of the store."""

    def __init__(self, site: str, policy: SessionPolicy) -> None:
        self.site = site
        self.policy = policy

    # ``job``: the job whose ledger records what the call does to a session (created,
    # passed, retired), in the same atomic step; None: no ledger (a local crawl).

    @abc.abstractmethod
    async def acquire(
        self,
        excluded_proxies: Sequence[str] = (),
        *,
        job: str | None = None,
        prefer: str | None = None,
    ) -> Session | Wait | None:
        """A session for one request, counted as used; None: there is room for a new one
        (``create`` it); ``Wait``: every session is busy or resting. Sessions past
        ``max_uses`` / ``max_age`` met on the way are retired (``take_retired``).
        ``prefer``: this live session first (a request retried on the session that just
        passed its challenge); ``Wait`` while it rests."""

    @abc.abstractmethod
    async def create(
        self, identity: Mapping[str, Any], proxies: Sequence[str], *, job: str | None = None
    ) -> Session | None:
        """A new session (its probe is this request), on the candidate proxy with the
        fewest live sessions; None when the pool filled up meanwhile."""

    @abc.abstractmethod
    async def record(
        self, session_id: str, outcome: Outcome, *, pause: float = 0.0, job: str | None = None
    ) -> None:
        """The answer to one of its requests: ``ok`` proves a new session and lowers its
        error score; ``error`` (network) and ``throttled`` (a 429; ``pause`` seconds before
        its next use) raise it, and ``max_errors`` retires it."""

    @abc.abstractmethod
    async def retire(self, session_id: str, reason: str, *, job: str | None = None) -> bool:
        """Out of the pool for good; True if this call retired it."""

    @abc.abstractmethod
    async def begin_challenge(self, session_id: str) -> bool:
        """Hold the session to pass its challenge; False when another request already
        holds it (its request should use another session)."""

    @abc.abstractmethod
    async def challenge_passed(
        self, session_id: str, cookies: Sequence[Mapping[str, Any]], *, job: str | None = None
    ) -> int:
        """The browser passed the challenge: its cookie jar replaces the session's, the
        session is live again; returns the new generation (0: the session was retired
        meanwhile and the cookies are dropped)."""

    @abc.abstractmethod
    async def merge_cookies(self, session_id: str, cookies: Sequence[Mapping[str, Any]]) -> None:
        """Cookies a plain answer set (a cookie with ``expires`` in the past is deleted)."""

    @abc.abstractmethod
    async def sessions(self) -> list[dict[str, Any]]:
        """Every session in the pool with its record (for operators and tests)."""

    @abc.abstractmethod
    def take_retired(self) -> list[Retired]:
        """Sessions this store retired by itself since the last call (age, uses, errors)."""

    @abc.abstractmethod
    async def defended(self) -> str | None:
        """The block that showed the site defends itself (``mark_defended``), or None."""

    @abc.abstractmethod
    async def mark_defended(self, seen: str) -> bool:
        """The site answered a block (``seen``: its kind and rule): known as defended for
        ``DEFENSE_TTL`` seconds from now. True if it was not known before."""

    async def close(self) -> None:  # noqa: B027 - optional hook, nothing to close by default
        """Release connections."""


def expired(cookie: Mapping[str, Any], now: float) -> bool:
    expires = cookie.get("expires")
    return expires is not None and expires >= 0 and expires <= now


# -- memory (a crawl without Redis) ---------------------------------------------------------


@dataclass
class _Record:
    identity: dict[str, Any]
    proxy: str
    created: float
    state: str = "probing"
    uses: int = 1
    errors: int = 0
    generation: int = 0
    ready_at: float = 0.0
    cookies: dict[str, dict[str, Any]] = field(default_factory=dict)
    reason: str = ""


class MemorySessionStore(SessionStore):
    """The same pool in this process, for a crawl without Redis (nothing shared)."""

    def __init__(self, site: str, policy: SessionPolicy) -> None:
        super().__init__(site, policy)
        self._records: dict[str, _Record] = {}
        self._retired: list[Retired] = []
        self._defense: tuple[str, float] | None = None  # (what was seen, until when)

    def _live(self) -> dict[str, _Record]:
        return {k: r for k, r in self._records.items() if r.state != "retired"}

    async def acquire(
        self,
        excluded_proxies: Sequence[str] = (),
        *,
        job: str | None = None,
        prefer: str | None = None,
    ) -> Session | Wait | None:
        p, now = self.policy, time.time()
        ready = sorted((r.ready_at, k) for k, r in self._live().items() if r.ready_at <= now)
        preferred = self._records.get(prefer or "")
        if preferred is not None and preferred.state == "live":
            if preferred.ready_at > now:
                return Wait(max(0.001, preferred.ready_at - now))
            ready.insert(0, (preferred.ready_at, prefer or ""))
        for _, key in ready[:SCAN_LIMIT]:
            record = self._records[key]
            if p.max_uses and record.uses >= p.max_uses:
                self._retire_record(key, "uses", report=True)
            elif p.max_age and now - record.created >= p.max_age:
                self._retire_record(key, "age", report=True)
            elif record.proxy not in excluded_proxies:
                probe = record.state != "live"
                if probe:
                    record.state, record.ready_at = "probing", now + p.hold
                else:
                    record.ready_at = now + p.interval
                record.uses += 1
                return Session(
                    key,
                    dict(record.identity),
                    record.proxy,
                    [dict(c) for c in record.cookies.values()],
                    record.generation,
                    probe,
                    record.errors,
                )
        live = self._live()
        if len(live) < p.max_sessions:
            return None
        earliest = min(r.ready_at for r in live.values())
        return Wait(max(0.001, earliest - now))

    async def create(
        self, identity: Mapping[str, Any], proxies: Sequence[str], *, job: str | None = None
    ) -> Session | None:
        live = self._live()
        if len(live) >= self.policy.max_sessions:
            return None
        counts = {proxy: 0 for proxy in (proxies or [""])}
        for record in live.values():
            if record.proxy in counts:
                counts[record.proxy] += 1
        proxy = min(counts, key=lambda candidate: counts[candidate])
        now = time.time()
        key = new_session_id()
        self._records[key] = _Record(dict(identity), proxy, now, ready_at=now + self.policy.hold)
        return Session(key, dict(identity), proxy, probe=True)

    async def record(
        self, session_id: str, outcome: Outcome, *, pause: float = 0.0, job: str | None = None
    ) -> None:
        record = self._records.get(session_id)
        if record is None or record.state == "retired":
            return
        now = time.time()
        if outcome == "ok":
            record.errors = max(0, record.errors - 1)
            if record.state == "probing":
                record.state, record.ready_at = "live", now + self.policy.interval
            return
        record.errors += 1
        if record.errors >= self.policy.max_errors:
            self._retire_record(session_id, "errors", report=True)
            return
        rest = now + max(self.policy.interval, pause)
        if record.state == "probing":
            record.state, record.ready_at = "new", rest
        else:
            record.ready_at = max(record.ready_at, rest)

    async def retire(self, session_id: str, reason: str, *, job: str | None = None) -> bool:
        return self._retire_record(session_id, reason, report=False)

    def _retire_record(self, session_id: str, reason: str, *, report: bool) -> bool:
        record = self._records.get(session_id)
        if record is None or record.state == "retired":
            return False
        record.state, record.reason = "retired", reason
        if report:
            self._retired.append(Retired(session_id, reason))
        return True

    async def begin_challenge(self, session_id: str) -> bool:
        record = self._records.get(session_id)
        now = time.time()
        if record is None or record.state == "retired":
            return False
        if record.state == "challenging" and record.ready_at > now:
            return False
        record.state, record.ready_at = "challenging", now + self.policy.hold
        return True

    async def challenge_passed(
        self, session_id: str, cookies: Sequence[Mapping[str, Any]], *, job: str | None = None
    ) -> int:
        record = self._records.get(session_id)
        if record is None or record.state == "retired":
            return 0
        now = time.time()
        record.cookies = {cookie_key(c): dict(c) for c in cookies if not expired(c, now)}
        record.state, record.ready_at = "live", now + self.policy.interval
        record.generation += 1
        return record.generation

    async def merge_cookies(self, session_id: str, cookies: Sequence[Mapping[str, Any]]) -> None:
        record = self._records.get(session_id)
        if record is None or record.state == "retired":
            return
        now = time.time()
        for cookie in cookies:
            if expired(cookie, now):
                record.cookies.pop(cookie_key(cookie), None)
            else:
                record.cookies[cookie_key(cookie)] = dict(cookie)

    async def sessions(self) -> list[dict[str, Any]]:
        return [
            {
                "id": key,
                "state": r.state,
                "proxy": r.proxy,
                "uses": str(r.uses),
                "errors": str(r.errors),
                "generation": str(r.generation),
            }
            for key, r in self._live().items()
        ]

    def take_retired(self) -> list[Retired]:
        retired, self._retired = self._retired, []
        return retired

    async def defended(self) -> str | None:
        if self._defense is None or self._defense[1] <= time.time():
            return None
        return self._defense[0]

    async def mark_defended(self, seen: str) -> bool:
        known = await self.defended()
        self._defense = (known or seen, time.time() + DEFENSE_TTL)
        return known is None
