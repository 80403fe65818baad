"""Which page types of a site need a browser: decided by evidence, shared by all workers.

Under ``RENDER_MODE = "auto"`` a page type (a spider callback) starts *learning*: some of
its pages are fetched both ways (plain HTTP and rendered in Chromium) and what the
callback makes of each is compared (``crawlers.fetch.adaptive``). Each comparison says
whether plain HTTP gave the same output as the browser:

- learning: the first comparison that differs makes the page type ``render``; ``sample``
  that agree make it ``plain``;
- ``plain``: a share of its pages is still checked; one that differs makes it ``render``;
- ``render``: a share is checked the other way; ``sample`` agreeing in a row make it
  ``plain`` again (the site stopped needing the browser).

The state is per site in Redis (one hash under the site's hash tag: ``<callback>:mode``,
``:agree``, ``:disagree``, ``:probes``), updated atomically in Lua, or in memory for a
crawl without Redis. Framework-agnostic: no Scrapy here.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Literal

import redis.asyncio

from core.keys import SiteKeys

Mode = Literal["learning", "plain", "render"]


@dataclass(frozen=True)
class Choice:
    mode: Mode
    agree: int = 0
    disagree: int = 0
    probes: int = 0  # comparisons started while learning (bounds the learning cost)


def next_choice(choice: Choice, same: bool, sample: int) -> Choice:
    """The state after one comparison (``same``: plain HTTP gave the browser's output)."""
    if choice.mode == "learning":
        if not same:
            return Choice("render")
        if choice.agree + 1 >= sample:
            return Choice("plain")
        return Choice("learning", choice.agree + 1, choice.disagree, choice.probes)
    if choice.mode == "plain":
        return Choice("render") if not same else Choice("plain", choice.agree + 1)
    if same:
        if choice.agree + 1 >= sample:
            return Choice("plain")
        return Choice("render", choice.agree + 1)
    return Choice("render", 0, choice.disagree + 1)


class ChoiceStore(abc.ABC):
    def __init__(self, site: str, sample: int) -> None:
        if sample < 1:
            raise ValueError("the render sample must be at least 1 page")
        self.site = site
        self.sample = sample

    @abc.abstractmethod
    async def choices(self) -> dict[str, Choice]:
        """Every page type's state (those never seen are learning)."""

    @abc.abstractmethod
    async def start_probe(self, callback: str) -> bool:
        """Count a comparison started for a learning page type; False once ``sample``
        are under way (more would only cost renders)."""

    @abc.abstractmethod
    async def record(self, callback: str, same: bool) -> Choice:
        """One comparison's result; returns the page type's new state."""

    @abc.abstractmethod
    async def put_summary(self, ref: str, summary: str) -> None:
        """What the callback made of a page fetched one way, until the other way's comes
        (``ref``: the request's fingerprint)."""

    @abc.abstractmethod
    async def take_summary(self, ref: str) -> str | None:
        """The summary put for ``ref``, removed (None: none, or taken already)."""


# KEYS: the site's render-choice hash ; ARGV: callback, same (1|0), sample
# -> mode, agree, disagree, probes
_RECORD = """
local h, cb, same, sample = KEYS[1], ARGV[1], ARGV[2] == '1', tonumber(ARGV[3])
local mode = redis.call('HGET', h, cb .. ':mode') or 'learning'
local agree = tonumber(redis.call('HGET', h, cb .. ':agree') or '0')
local disagree = tonumber(redis.call('HGET', h, cb .. ':disagree') or '0')
local probes = tonumber(redis.call('HGET', h, cb .. ':probes') or '0')
if mode == 'learning' then
  if not same then mode, agree, disagree = 'render', 0, 0
  elseif agree + 1 >= sample then mode, agree, disagree = 'plain', 0, 0
  else agree = agree + 1 end
elseif mode == 'plain' then
  if not same then mode, agree, disagree = 'render', 0, 0 else agree = agree + 1 end
else
  if same then
    if agree + 1 >= sample then mode, agree, disagree = 'plain', 0, 0 else agree = agree + 1 end
  else agree, disagree = 0, disagree + 1 end
end
if mode ~= 'learning' then probes = 0 end
redis.call('HSET', h, cb .. ':mode', mode, cb .. ':agree', agree, cb .. ':disagree', disagree,
  cb .. ':probes', probes)
return {mode, agree, disagree, probes}
"""

# KEYS: the hash ; ARGV: callback, sample -> 1 started | 0 enough under way
_START_PROBE = """
local mode = redis.call('HGET', KEYS[1], ARGV[1] .. ':mode') or 'learning'
if mode ~= 'learning' then return 1 end
local probes = tonumber(redis.call('HGET', KEYS[1], ARGV[1] .. ':probes') or '0')
if probes >= tonumber(ARGV[2]) then return 0 end
redis.call('HINCRBY', KEYS[1], ARGV[1] .. ':probes', 1)
return 1
"""


# KEYS: the probes hash ; ARGV: ref -> the summary (removed) or false
_TAKE = """
local found = redis.call('HGET', KEYS[1], ARGV[1])
if found then redis.call('HDEL', KEYS[1], ARGV[1]) end
return found
"""
PROBE_TTL = 86_400  # seconds a summary waits for its other half (a lost probe expires)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class RedisChoiceStore(ChoiceStore):
    def __init__(self, server: redis.asyncio.Redis, site: str, sample: int) -> None:
        super().__init__(site, sample)
        self.server = server
        self.key = SiteKeys(site).render_choice
        self.probes_key = SiteKeys(site).render_probes
        self._record = server.register_script(_RECORD)
        self._start = server.register_script(_START_PROBE)
        self._take = server.register_script(_TAKE)

    async def choices(self) -> dict[str, Choice]:
        raw = {_text(k): _text(v) for k, v in (await self.server.hgetall(self.key)).items()}
        out: dict[str, Choice] = {}
        for field in raw:
            callback, _, name = field.rpartition(":")
            if name != "mode" or not callback:
                continue
            out[callback] = Choice(
                raw[field],  # type: ignore[arg-type]  # a Mode: only the scripts write it
                int(raw.get(f"{callback}:agree", 0)),
                int(raw.get(f"{callback}:disagree", 0)),
                int(raw.get(f"{callback}:probes", 0)),
            )
        return out

    async def start_probe(self, callback: str) -> bool:
        return bool(int(await self._start(keys=[self.key], args=[callback, self.sample])))

    async def record(self, callback: str, same: bool) -> Choice:
        mode, agree, disagree, probes = await self._record(
            keys=[self.key], args=[callback, "1" if same else "0", self.sample]
        )
        return Choice(_text(mode), int(agree), int(disagree), int(probes))  # type: ignore[arg-type]  # a Mode (_RECORD)

    async def put_summary(self, ref: str, summary: str) -> None:
        async with self.server.pipeline(transaction=False) as pipe:
            pipe.hset(self.probes_key, ref, summary)
            pipe.expire(self.probes_key, PROBE_TTL)
            await pipe.execute()

    async def take_summary(self, ref: str) -> str | None:
        found = await self._take(keys=[self.probes_key], args=[ref])
        return None if found is None else _text(found)


class MemoryChoiceStore(ChoiceStore):
    def __init__(self, site: str, sample: int) -> None:
        super().__init__(site, sample)
        self._choices: dict[str, Choice] = {}
        self._summaries: dict[str, str] = {}

    async def put_summary(self, ref: str, summary: str) -> None:
        self._summaries[ref] = summary

    async def take_summary(self, ref: str) -> str | None:
        return self._summaries.pop(ref, None)

    async def choices(self) -> dict[str, Choice]:
        return dict(self._choices)

    async def start_probe(self, callback: str) -> bool:
        choice = self._choices.get(callback, Choice("learning"))
        if choice.mode != "learning":
            return True
        if choice.probes >= self.sample:
            return False
        self._choices[callback] = Choice(
            "learning", choice.agree, choice.disagree, choice.probes + 1
        )
        return True

    async def record(self, callback: str, same: bool) -> Choice:
        choice = next_choice(self._choices.get(callback, Choice("learning")), same, self.sample)
        self._choices[callback] = choice
        return choice
