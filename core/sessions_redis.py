"""The fetch-session pool in Redis, shared by every worker of a site (``core.sessions``
has the model, the store's contract and the in-memory store).

Each step of the pool is one Lua script, run atomically: every key under the site's hash
tag (``core.keys.SiteKeys``), so a Redis Cluster runs them as one Redis does, and time is
Redis' clock (``TIME``), never a worker's. The scripts are here, each headed by its KEYS
and ARGV, beside ``RedisSessionStore`` which registers and runs them.

A script that creates, clears or retires a session also writes the event into the job's
ledger hash (``SiteKeys.job_sessions``, the last KEY; the last ARGV its TTL, 0 for no
job): the session and the report's record of it exist together or not at all.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import redis.asyncio

from core.jobstats import STATS_TTL_SECONDS
from core.keys import SiteKeys
from core.sessions import (
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

# Shared by the scripts: ``now`` is Redis' clock (epoch ms), never a worker's.
_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# The job's ledger: the last KEY (its sessions hash, or any key of the site without a
# job), the last ARGV its TTL in seconds (0: no job, nothing written).
_LEDGER_FUNCTION = """
local function ledger(field, value)
  local ttl = tonumber(ARGV[#ARGV])
  if ttl > 0 then
    redis.call('HSET', KEYS[#KEYS], field, value)
    redis.call('EXPIRE', KEYS[#KEYS], ttl)
  end
end
"""

# Retire one session: out of the pool, its proxy's count down, its record kept a day, the
# ledger told. Needs KEYS[1] pool, KEYS[2] per-proxy counts; ARGV[1] the session prefix.
_RETIRE_FUNCTION = (
    _LEDGER_FUNCTION
    + """
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
  ledger('retired:' .. id, reason)
  return 1
end
"""
)

# KEYS: pool, proxy counts, ledger ; ARGV: session prefix, interval ms, max uses, max age
# ms, max sessions, hold ms, scan limit, retired ttl, excluded proxies (JSON list), the
# preferred session ('' none), ledger ttl
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
local prefer = ARGV[10]
if prefer ~= '' and redis.call('HGET', ARGV[1] .. prefer, 'state') == 'live' then
  local score = tonumber(redis.call('ZSCORE', KEYS[1], prefer) or '0')
  if score > now then return finish({'wait', tostring(math.max(1, score - now))}) end
  table.insert(ids, 1, prefer)
end
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

# KEYS: pool, proxy counts, ledger ; ARGV: session prefix, id, identity JSON, max
# sessions, hold ms, candidate proxies (JSON list, "" = direct), ledger ttl -> the chosen
# proxy, or false when full
_CREATE = (
    _NOW
    + _LEDGER_FUNCTION
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
ledger('created:' .. ARGV[2], '1')
return best
"""
)

# KEYS: pool, proxy counts, ledger ; ARGV: session prefix, id, outcome, interval ms, max
# errors, pause ms, retired ttl, ledger ttl -> 'retired' when the errors retired it, else
# the state
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

# KEYS: pool, proxy counts, ledger ; ARGV: session prefix, id, reason, retired ttl, ledger
# ttl -> 1 | 0
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

# KEYS: pool, ledger ; ARGV: session prefix, id, interval ms, cookie key/JSON pairs...,
# ledger ttl -> the new generation, 0 when the session was retired meanwhile
_CHALLENGE_PASSED = (
    _NOW
    + _LEDGER_FUNCTION
    + """
local key = ARGV[1] .. ARGV[2]
local state = redis.call('HGET', key, 'state')
if (not state) or state == 'retired' then return 0 end
local jar = key .. ':cookies'
redis.call('DEL', jar)
for i = 4, #ARGV - 1, 2 do redis.call('HSET', jar, ARGV[i], ARGV[i + 1]) end
redis.call('HSET', key, 'state', 'live')
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
local generation = redis.call('HINCRBY', key, 'generation', 1)
ledger('passed:' .. ARGV[2] .. ':' .. generation, '1')
return generation
"""
)

# KEYS: the defense key ; ARGV: what was seen, ttl s -> 1 newly known | 0 known (its TTL
# renewed: a site keeps being known while it keeps answering blocks)
_MARK_DEFENDED = """
local known = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', tonumber(ARGV[2]))
if known then return 1 end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
return 0
"""

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
        self._mark_defended = server.register_script(_MARK_DEFENDED)

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
