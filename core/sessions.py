"""Fetch sessions shared by every worker of a site: identity, proxy, cookies, usage, health.

A session is what a site's bot defense sees as one visitor: one browser identity (the
User-Agent and client hints of ``crawlers.fetch.identity``), one proxy, one cookie jar.
Sites bind their clearance cookies to those (a DataDome or Cloudflare cookie obtained by
one User-Agent or address is worthless to another), and they budget requests per
visitor. So the pool hands out sessions, not proxies, and keeps for each:

* ``uses`` and ``created``: retired after ``max_uses`` requests or ``max_age`` seconds;
* ``errors``: network errors and throttles count up, a good answer counts down; retired at
  ``max_errors``;
* a **rate budget**: a session is handed out at most once per ``interval`` seconds (its
  score in the pool is the next time it may be used), so no visitor goes faster than
  the site tolerates however many requests wait;
* ``state``: ``new`` (no answer yet) -> ``live``. A new session is *probed* by one request
  at a time, and a session whose challenge is being passed is *held* by its solver, so
  one visitor never shows the site a burst of unproven requests and a challenge is
  passed once, not once per waiting request. A probe or a hold lasts at most ``hold``
  seconds: a worker killed meanwhile gives the session back;
* ``generation``: how many times a challenge was passed for it (the ledger counts each
  pass once).

A block or a CAPTCHA retires the session at once (a person would be needed); the request
goes on with another one. Retired sessions leave the pool; their record stays a day for
forensics.

Storage is behind ``SessionStore``: ``RedisSessionStore`` (Lua scripts, every key under
the site's hash tag from ``core.keys.SiteKeys``, so a Redis Cluster runs them as one
Redis does; time is Redis' clock, never a worker's) shared by all workers, and
``MemorySessionStore`` for a crawl without Redis. The state machine is written once per
store; ``tests/core/test_sessions.py`` runs the same behaviours against both.

Framework-agnostic: no Scrapy here (``crawlers.fetch.sessions`` is the crawl's glue).
"""

from __future__ import annotations

import abc
import json
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import redis.asyncio

from core.keys import SiteKeys

Outcome = Literal["ok", "error", "throttled"]
RETIRED_TTL = 86_400  # seconds a retired session's record is kept, for forensics


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

    @abc.abstractmethod
    async def acquire(self, excluded_proxies: Sequence[str] = ()) -> Session | Wait | None:
        """A session for one request, counted as used; None: there is room for a new one
        (``create`` it); ``Wait``: every session is busy or resting. Sessions past
        ``max_uses`` / ``max_age`` met on the way are retired (``take_retired``)."""

    @abc.abstractmethod
    async def create(self, identity: Mapping[str, Any], proxies: Sequence[str]) -> Session | None:
        """A new session (its probe is this request), on the candidate proxy with the
        fewest live sessions; None when the pool filled up meanwhile."""

    @abc.abstractmethod
    async def record(self, session_id: str, outcome: Outcome, *, pause: float = 0.0) -> None:
        """The answer to one of its requests: ``ok`` proves a new session and lowers its
        error score; ``error`` (network) and ``throttled`` (a 429; ``pause`` seconds before
        its next use) raise it, and ``max_errors`` retires it."""

    @abc.abstractmethod
    async def retire(self, session_id: str, reason: str) -> bool:
        """Out of the pool for good; True if this call retired it."""

    @abc.abstractmethod
    async def begin_challenge(self, session_id: str) -> bool:
        """Hold the session to pass its challenge; False when another request already
        holds it (its request should use another session)."""

    @abc.abstractmethod
    async def challenge_passed(self, session_id: str, cookies: Sequence[Mapping[str, Any]]) -> int:
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

    async def close(self) -> None:  # noqa: B027 - optional hook, nothing to close by default
        """Release connections."""


# -- Redis ----------------------------------------------------------------------------------

# Shared by the scripts: ``now`` is Redis' clock (epoch ms), never a worker's.
_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# Retire one session: out of the pool, its proxy's count down, its record kept a day.
# Needs KEYS[1] pool, KEYS[2] per-proxy counts; ARGV[1] the session key prefix.
_RETIRE_FUNCTION = """
local function retire(id, reason, ttl)
  local key = ARGV[1] .. id
  local state = redis.call('HGET', key, 'state')
  redis.call('ZREM', KEYS[1], id)
  if (not state) or state == 'retired' then return 0 end
  local proxy = redis.call('HGET', key, 'proxy')
  if proxy then
    if tonumber(redis.call('HINCRBY', KEYS[2], proxy, -1)) <= 0 then
      redis.call('HDEL', KEYS[2], proxy)
    end
  end
  redis.call('HSET', key, 'state', 'retired', 'reason', reason)
  redis.call('EXPIRE', key, ttl)
  redis.call('EXPIRE', key .. ':cookies', ttl)
  return 1
end
"""

# KEYS: pool, proxy counts ; ARGV: session prefix, interval ms, max uses, max age ms,
# max sessions, hold ms, scan limit, retired ttl, excluded proxies (JSON list)
# -> {'use'|'probe', id, identity, proxy, generation, cookie, cookie, ...}
#  | {'create'} | {'wait', ms} ; then each retired id and reason as {'retired', id, reason}
_ACQUIRE = (
    _NOW
    + _RETIRE_FUNCTION
    + """
local interval, max_uses, max_age = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local hold = tonumber(ARGV[6])
local excluded = {}
for _, proxy in ipairs(cjson.decode(ARGV[9])) do excluded[proxy] = true end
local retired = {}
local function finish(out)
  for _, r in ipairs(retired) do
    table.insert(out, 'retired'); table.insert(out, r[1]); table.insert(out, r[2])
  end
  return out
end
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[7]))
for _, id in ipairs(ids) do
  local key = ARGV[1] .. id
  local f = redis.call('HMGET', key, 'state', 'uses', 'created', 'proxy', 'identity', 'generation',
    'errors')
  local state, uses, created = f[1], tonumber(f[2] or '0'), tonumber(f[3] or '0')
  if not state then
    redis.call('ZREM', KEYS[1], id)
  elseif max_uses > 0 and uses >= max_uses then
    if retire(id, 'uses', tonumber(ARGV[8])) == 1 then table.insert(retired, {id, 'uses'}) end
  elseif max_age > 0 and now - created >= max_age then
    if retire(id, 'age', tonumber(ARGV[8])) == 1 then table.insert(retired, {id, 'age'}) end
  elseif not excluded[f[4]] then
    local kind = 'use'
    if state == 'live' then
      redis.call('ZADD', KEYS[1], now + interval, id)
    else
      -- new, or a probe/challenge whose holder did not come back within the hold
      kind = 'probe'
      redis.call('HSET', key, 'state', 'probing')
      redis.call('ZADD', KEYS[1], now + hold, id)
    end
    redis.call('HINCRBY', key, 'uses', 1)
    local out = {kind, id, f[5], f[4], f[6] or '0', f[7] or '0'}
    for _, cookie in ipairs(redis.call('HVALS', key .. ':cookies')) do table.insert(out, cookie) end
    return finish(out)
  end
end
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[5]) then return finish({'create'}) end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local wait = 0
if #first > 0 then wait = math.max(1, tonumber(first[2]) - now) end
return finish({'wait', tostring(wait)})
"""
)

# KEYS: pool, proxy counts ; ARGV: session prefix, id, identity JSON, max sessions, hold ms,
# candidate proxies (JSON list, "" = direct) -> the chosen proxy, or false when full
_CREATE = (
    _NOW
    + """
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return false end
local best, fewest = nil, nil
for _, proxy in ipairs(cjson.decode(ARGV[6])) do
  local n = tonumber(redis.call('HGET', KEYS[2], proxy) or '0')
  if fewest == nil or n < fewest then best, fewest = proxy, n end
end
if best == nil then best = '' end
local key = ARGV[1] .. ARGV[2]
redis.call('HSET', key, 'state', 'probing', 'identity', ARGV[3], 'proxy', best,
  'created', now, 'uses', 1, 'errors', 0, 'generation', 0)
redis.call('HINCRBY', KEYS[2], best, 1)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[5]), ARGV[2])
return best
"""
)

# KEYS: pool, proxy counts ; ARGV: session prefix, id, outcome, interval ms, max errors,
# pause ms, retired ttl -> 'retired' when the errors retired it, else the state
_RECORD = (
    _NOW
    + _RETIRE_FUNCTION
    + """
local key = ARGV[1] .. ARGV[2]
local state = redis.call('HGET', key, 'state')
if (not state) or state == 'retired' then return 'retired' end
local outcome = ARGV[3]
if outcome == 'ok' then
  local errors = tonumber(redis.call('HGET', key, 'errors') or '0')
  if errors > 0 then redis.call('HSET', key, 'errors', errors - 1) end
  if state == 'probing' then
    redis.call('HSET', key, 'state', 'live')
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[2])
    return 'live'
  end
  return state
end
local errors = tonumber(redis.call('HINCRBY', key, 'errors', 1))
if errors >= tonumber(ARGV[5]) then
  retire(ARGV[2], 'errors', tonumber(ARGV[7]))
  return 'retired'
end
local rest = now + math.max(tonumber(ARGV[4]), tonumber(ARGV[6]))
if state == 'probing' then
  -- the probe did not prove it: another request may probe it after the pause
  redis.call('HSET', key, 'state', 'new')
  redis.call('ZADD', KEYS[1], rest, ARGV[2])
  return 'new'
end
redis.call('ZADD', KEYS[1], 'GT', rest, ARGV[2])
return state
"""
)

# KEYS: pool, proxy counts ; ARGV: session prefix, id, reason, retired ttl -> 1 | 0
_RETIRE = (
    _RETIRE_FUNCTION
    + """
return retire(ARGV[2], ARGV[3], tonumber(ARGV[4]))
"""
)

# KEYS: pool ; ARGV: session prefix, id, hold ms -> 1 the caller holds it | 0
_BEGIN_CHALLENGE = (
    _NOW
    + """
local key = ARGV[1] .. ARGV[2]
local state = redis.call('HGET', key, 'state')
if (not state) or state == 'retired' then return 0 end
if state == 'challenging' then
  local until_ms = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[2]) or '0')
  if until_ms > now then return 0 end
end
redis.call('HSET', key, 'state', 'challenging')
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
return 1
"""
)

# KEYS: pool ; ARGV: session prefix, id, interval ms, cookie key/JSON pairs...
# -> the new generation, 0 when the session was retired meanwhile
_CHALLENGE_PASSED = (
    _NOW
    + """
local key = ARGV[1] .. ARGV[2]
local state = redis.call('HGET', key, 'state')
if (not state) or state == 'retired' then return 0 end
local jar = key .. ':cookies'
redis.call('DEL', jar)
for i = 4, #ARGV, 2 do redis.call('HSET', jar, ARGV[i], ARGV[i + 1]) end
redis.call('HSET', key, 'state', 'live')
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
return redis.call('HINCRBY', key, 'generation', 1)
"""
)

# ARGV: session prefix, id, then (cookie key, JSON or '' to delete) pairs
_MERGE_COOKIES = """
local key = ARGV[1] .. ARGV[2]
local state = redis.call('HGET', key, 'state')
if (not state) or state == 'retired' then return 0 end
local jar = key .. ':cookies'
for i = 3, #ARGV, 2 do
  if ARGV[i + 1] == '' then redis.call('HDEL', jar, ARGV[i])
  else redis.call('HSET', jar, ARGV[i], ARGV[i + 1]) end
end
return 1
"""

_SCAN_LIMIT = 64  # sessions looked at per acquire (past the budget ones are retired first)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _cookie_pairs(cookies: Sequence[Mapping[str, Any]], *, now: float) -> list[str]:
    """(key, JSON) pairs; an expired cookie's JSON is '' (delete)."""
    pairs: list[str] = []
    for cookie in cookies:
        expires = cookie.get("expires")
        gone = expires is not None and expires >= 0 and expires <= now
        pairs += [cookie_key(cookie), "" if gone else json.dumps(dict(cookie), sort_keys=True)]
    return pairs


class RedisSessionStore(SessionStore):
    """The pool in Redis, shared by every worker of the site (asyncio client)."""

    def __init__(self, server: redis.asyncio.Redis, site: str, policy: SessionPolicy) -> None:
        super().__init__(site, policy)
        self.server = server
        self.keys = SiteKeys(site)
        self._retired: list[Retired] = []
        self._acquire = server.register_script(_ACQUIRE)
        self._create = server.register_script(_CREATE)
        self._record = server.register_script(_RECORD)
        self._retire = server.register_script(_RETIRE)
        self._begin = server.register_script(_BEGIN_CHALLENGE)
        self._passed = server.register_script(_CHALLENGE_PASSED)
        self._merge = server.register_script(_MERGE_COOKIES)

    @property
    def _pool_keys(self) -> list[str]:
        return [self.keys.sessions, self.keys.session_proxies]

    async def acquire(self, excluded_proxies: Sequence[str] = ()) -> Session | Wait | None:
        p = self.policy
        reply = await self._acquire(
            keys=self._pool_keys,
            args=[
                self.keys.session_prefix,
                int(p.interval * 1000),
                p.max_uses,
                int(p.max_age * 1000),
                p.max_sessions,
                int(p.hold * 1000),
                _SCAN_LIMIT,
                RETIRED_TTL,
                json.dumps(list(excluded_proxies)),
            ],
        )
        values = [_text(v) for v in reply]
        while len(values) >= 3 and values[-3] == "retired":
            self._retired.append(Retired(values[-2], values[-1]))
            del values[-3:]
        kind = values[0]
        if kind == "create":
            return None
        if kind == "wait":
            return Wait(int(values[1]) / 1000)
        return Session(
            id=values[1],
            identity=json.loads(values[2]),
            proxy=values[3],
            generation=int(values[4]),
            errors=int(values[5]),
            cookies=[json.loads(v) for v in values[6:]],
            probe=kind == "probe",
        )

    async def create(self, identity: Mapping[str, Any], proxies: Sequence[str]) -> Session | None:
        session_id = new_session_id()
        encoded = json.dumps(dict(identity), sort_keys=True)
        proxy = await self._create(
            keys=self._pool_keys,
            args=[
                self.keys.session_prefix,
                session_id,
                encoded,
                self.policy.max_sessions,
                int(self.policy.hold * 1000),
                json.dumps(list(proxies) or [""]),
            ],
        )
        if proxy is None:
            return None
        return Session(session_id, dict(identity), _text(proxy), probe=True)

    async def record(self, session_id: str, outcome: Outcome, *, pause: float = 0.0) -> None:
        state = await self._record(
            keys=self._pool_keys,
            args=[
                self.keys.session_prefix,
                session_id,
                outcome,
                int(self.policy.interval * 1000),
                self.policy.max_errors,
                int(pause * 1000),
                RETIRED_TTL,
            ],
        )
        if outcome != "ok" and _text(state) == "retired":
            self._retired.append(Retired(session_id, "errors"))

    async def retire(self, session_id: str, reason: str) -> bool:
        done = await self._retire(
            keys=self._pool_keys,
            args=[self.keys.session_prefix, session_id, reason, RETIRED_TTL],
        )
        return bool(int(done))

    async def begin_challenge(self, session_id: str) -> bool:
        held = await self._begin(
            keys=[self.keys.sessions],
            args=[self.keys.session_prefix, session_id, int(self.policy.hold * 1000)],
        )
        return bool(int(held))

    async def challenge_passed(self, session_id: str, cookies: Sequence[Mapping[str, Any]]) -> int:
        live = [c for c in cookies if not _expired(c, time.time())]
        pairs: list[str] = []
        for cookie in live:
            pairs += [cookie_key(cookie), json.dumps(dict(cookie), sort_keys=True)]
        generation = await self._passed(
            keys=[self.keys.sessions],
            args=[
                self.keys.session_prefix,
                session_id,
                int(self.policy.interval * 1000),
                *pairs,
            ],
        )
        return int(generation)

    async def merge_cookies(self, session_id: str, cookies: Sequence[Mapping[str, Any]]) -> None:
        if cookies:
            await self._merge(
                keys=[self.keys.sessions],
                args=[
                    self.keys.session_prefix,
                    session_id,
                    *_cookie_pairs(cookies, now=time.time()),
                ],
            )

    async def sessions(self) -> list[dict[str, Any]]:
        ids = [_text(i) for i in await self.server.zrange(self.keys.sessions, 0, -1)]
        out = []
        for session_id in ids:
            record = await self.server.hgetall(self.keys.session_prefix + session_id)
            out.append({"id": session_id, **{_text(k): _text(v) for k, v in record.items()}})
        return out

    def take_retired(self) -> list[Retired]:
        retired, self._retired = self._retired, []
        return retired


def _expired(cookie: Mapping[str, Any], now: float) -> bool:
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

    def _live(self) -> dict[str, _Record]:
        return {k: r for k, r in self._records.items() if r.state != "retired"}

    async def acquire(self, excluded_proxies: Sequence[str] = ()) -> Session | Wait | None:
        p, now = self.policy, time.time()
        ready = sorted((r.ready_at, k) for k, r in self._live().items() if r.ready_at <= now)
        for _, key in ready[:_SCAN_LIMIT]:
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

    async def create(self, identity: Mapping[str, Any], proxies: Sequence[str]) -> Session | None:
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

    async def record(self, session_id: str, outcome: Outcome, *, pause: float = 0.0) -> None:
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

    async def retire(self, session_id: str, reason: str) -> bool:
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

    async def challenge_passed(self, session_id: str, cookies: Sequence[Mapping[str, Any]]) -> int:
        record = self._records.get(session_id)
        if record is None or record.state == "retired":
            return 0
        now = time.time()
        record.cookies = {cookie_key(c): dict(c) for c in cookies if not _expired(c, now)}
        record.state, record.ready_at = "live", now + self.policy.interval
        record.generation += 1
        return record.generation

    async def merge_cookies(self, session_id: str, cookies: Sequence[Mapping[str, Any]]) -> None:
        record = self._records.get(session_id)
        if record is None or record.state == "retired":
            return
        now = time.time()
        for cookie in cookies:
            if _expired(cookie, now):
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
