"""The fetch-session pool in Redis, shared by every worker of a site (``core.sessions.store``
has the model, the store's contract and the in-memory store).

Each step of the pool is one Lua script, run atomically (``core/sessions/lua/*.lua``, each
headed by its KEYS and ARGV): every key under the site's hash tag
(``core.keys.SiteKeys``), so a Redis Cluster runs them as one Redis does, and time is
Redis' clock (``TIME``), never a worker's. ``RedisSessionStore`` registers and runs them.

A script that creates, clears or retires a session also writes the event into the job's
ledger hash (``SiteKeys.job_sessions``, the last KEY; the last ARGV its TTL, 0 for no
job): the session and the report's record of it exist together or not at all.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from core.figures.stats import STATS_TTL_SECONDS
from core.keys import SiteKeys
from core.lua import load_script
from core.redis_client import AsyncClient
from core.sessions.store import (
    DEFENSE_TTL,
    RETIRED_TTL,
    SCAN_LIMIT,
    Outcome,
    Retired,
    Session,
    SessionPolicy,
    SessionStore,
    Wait,
    cookie_key,
    expired,
    new_session_id,
)


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

    def __init__(self, server: AsyncClient, site: str, policy: SessionPolicy) -> None:
        super().__init__(site, policy)
        self.server = server
        self.keys = SiteKeys(site)
        self._retired: list[Retired] = []
        self._acquire = server.register_script(load_script("core.sessions", "acquire"))
        self._create = server.register_script(load_script("core.sessions", "create"))
        self._record = server.register_script(load_script("core.sessions", "record"))
        self._retire = server.register_script(load_script("core.sessions", "retire"))
        self._begin = server.register_script(load_script("core.sessions", "begin_challenge"))
        self._passed = server.register_script(load_script("core.sessions", "challenge_passed"))
        self._merge = server.register_script(load_script("core.sessions", "merge_cookies"))
        self._mark_defended = server.register_script(load_script("core.sessions", "mark_defended"))

    @property
    def _pool_keys(self) -> list[str]:
        return [self.keys.sessions, self.keys.session_proxies]

    def _ledger(self, job: str | None) -> tuple[str, int]:
        """The ledger's KEY and TTL ARGV for a call on behalf of ``job``."""
        if not job:
            return self.keys.sessions, 0
        return self.keys.job_sessions(job), STATS_TTL_SECONDS

    async def acquire(
        self,
        excluded_proxies: Sequence[str] = (),
        *,
        job: str | None = None,
        prefer: str | None = None,
    ) -> Session | Wait | None:
        p = self.policy
        ledger, ttl = self._ledger(job)
        reply = await self._acquire(
            keys=[*self._pool_keys, ledger],
            args=[
                self.keys.session_prefix,
                int(p.interval * 1000),
                p.max_uses,
                int(p.max_age * 1000),
                p.max_sessions,
                int(p.hold * 1000),
                SCAN_LIMIT,
                RETIRED_TTL,
                json.dumps(list(excluded_proxies)),
                prefer or "",
                ttl,
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

    async def create(
        self, identity: Mapping[str, Any], proxies: Sequence[str], *, job: str | None = None
    ) -> Session | None:
        session_id = new_session_id()
        encoded = json.dumps(dict(identity), sort_keys=True)
        ledger, ttl = self._ledger(job)
        proxy = await self._create(
            keys=[*self._pool_keys, ledger],
            args=[
                self.keys.session_prefix,
                session_id,
                encoded,
                self.policy.max_sessions,
                int(self.policy.hold * 1000),
                json.dumps(list(proxies) or [""]),
                ttl,
            ],
        )
        if proxy is None:
            return None
        return Session(session_id, dict(identity), _text(proxy), probe=True)

    async def record(
        self, session_id: str, outcome: Outcome, *, pause: float = 0.0, job: str | None = None
    ) -> None:
        ledger, ttl = self._ledger(job)
        state = await self._record(
            keys=[*self._pool_keys, ledger],
            args=[
                self.keys.session_prefix,
                session_id,
                outcome,
                int(self.policy.interval * 1000),
                self.policy.max_errors,
                int(pause * 1000),
                RETIRED_TTL,
                ttl,
            ],
        )
        if outcome != "ok" and _text(state) == "retired":
            self._retired.append(Retired(session_id, "errors"))

    async def retire(self, session_id: str, reason: str, *, job: str | None = None) -> bool:
        ledger, ttl = self._ledger(job)
        done = await self._retire(
            keys=[*self._pool_keys, ledger],
            args=[self.keys.session_prefix, session_id, reason, RETIRED_TTL, ttl],
        )
        return bool(int(done))

    async def begin_challenge(self, session_id: str) -> bool:
        held = await self._begin(
            keys=[self.keys.sessions],
            args=[self.keys.session_prefix, session_id, int(self.policy.hold * 1000)],
        )
        return bool(int(held))

    async def challenge_passed(
        self, session_id: str, cookies: Sequence[Mapping[str, Any]], *, job: str | None = None
    ) -> int:
        live = [c for c in cookies if not expired(c, time.time())]
        pairs: list[str] = []
        for cookie in live:
            pairs += [cookie_key(cookie), json.dumps(dict(cookie), sort_keys=True)]
        ledger, ttl = self._ledger(job)
        generation = await self._passed(
            keys=[self.keys.sessions, ledger],
            args=[
                self.keys.session_prefix,
                session_id,
                int(self.policy.interval * 1000),
                *pairs,
                ttl,
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

    async def defended(self) -> str | None:
        seen = await self.server.get(self.keys.session_defense)
        return None if seen is None else _text(seen)

    async def mark_defended(self, seen: str) -> bool:
        marked = await self._mark_defended(
            keys=[self.keys.session_defense], args=[seen, DEFENSE_TTL]
        )
        return bool(int(marked))
