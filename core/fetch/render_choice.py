"""Which page types of a site need a browser: decided by evidence, shared by all workers.

Under ``RENDER_MODE = "auto"`` each page type (a spider callback) is ``learning``,
``plain`` or ``render``; comparisons of a page fetched both ways (``crawlers.fetch.adaptive``)
move it between them, a plain type is rechecked rarely (``start_recheck``), a render type
sampled the other way, and a page found the same while its type learns goes plain for a
while. A sample not back within ``stale`` seconds no longer counts. The state is one hash
per site in Redis (``{site}:render_choice``, updated in Lua, kept across jobs), or memory
without Redis. No Scrapy here.

Reads: its caller's ``sample`` / ``stale`` / recheck limits (``RENDER_AUTO_*``). The rules:
docs/fetching.md "Render only where needed (``RENDER_MODE = "auto"``)".
"""

from __future__ import annotations

import abc
import time
from dataclasses import dataclass, replace
from typing import Literal

from core.keys import SiteKeys
from core.lua import load_script
from core.redis_client import AsyncClient

Mode = Literal["learning", "plain", "render"]


@dataclass(frozen=True)
class Choice:
    mode: Mode
    agree: int = 0
    disagree: int = 0
    probes: int = 0  # comparisons started while learning (bounds the learning cost)
    checked: float = 0.0  # epoch seconds of its last comparison (0: unknown)


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


STALE_PROBES = 60.0  # seconds after which comparisons under way no longer count


class ChoiceStore(abc.ABC):
    def __init__(self, site: str, sample: int, stale: float = STALE_PROBES) -> None:
        if sample < 1:
            raise ValueError("the render sample must be at least 1 page")
        self.site = site
        self.sample = sample
        self.stale = stale

    @abc.abstractmethod
    async def choices(self) -> dict[str, Choice]:
        """Every page type's state (those never seen are learning)."""

    @abc.abstractmethod
    async def start_probe(self, callback: str) -> bool:
        """Count a comparison started for a learning page type; False once ``sample``
        are under way (more would only cost renders), unless the last one started over
        ``stale`` seconds ago (those are lost: counting starts again)."""

    @abc.abstractmethod
    async def start_recheck(self, callback: str, after: float) -> bool:
        """Claim the check of a ``plain`` page type whose last comparison is ``after``
        seconds old or older: True for one caller (its page is compared), until the
        check comes back or ``stale`` seconds pass."""

    @abc.abstractmethod
    async def record(self, callback: str, same: bool, page: str = "") -> Choice:
        """One comparison's result; returns the page type's new state. ``page`` (its
        fingerprint) is remembered when it agreed while its type was learning."""

    @abc.abstractmethod
    async def agreed(self, callback: str, page: str, within: float) -> bool:
        """Whether ``page`` was found the same both ways, while its type was learning,
        less than ``within`` seconds ago."""

    @abc.abstractmethod
    async def put_summary(self, ref: str, summary: str) -> None:
        """What the callback made of a page fetched one way, until the other way's comes
        (``ref``: the request's fingerprint)."""

    @abc.abstractmethod
    async def take_summary(self, ref: str) -> str | None:
        """The summary put for ``ref``, removed (None: none, or taken already)."""


# Lua, each script headed by its KEYS and ARGV: core/fetch/lua/render_*.lua
_RECORD = load_script("core.fetch", "render_record")
_START_RECHECK = load_script("core.fetch", "render_start_recheck")
_START_PROBE = load_script("core.fetch", "render_start_probe")
_TAKE = load_script("core.fetch", "render_take")
PROBE_TTL = 86_400  # seconds a summary waits for its other half (a lost probe expires)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class RedisChoiceStore(ChoiceStore):
    def __init__(
        self, server: AsyncClient, site: str, sample: int, stale: float = STALE_PROBES
    ) -> None:
        super().__init__(site, sample, stale)
        self.server = server
        self.key = SiteKeys(site).render_choice
        self.probes_key = SiteKeys(site).render_probes
        self._record = server.register_script(_RECORD)
        self._start = server.register_script(_START_PROBE)
        self._recheck = server.register_script(_START_RECHECK)
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
                float(raw.get(f"{callback}:checked", 0)),
            )
        return out

    async def start_probe(self, callback: str) -> bool:
        args: list[str | int | float] = [callback, self.sample, int(self.stale * 1000)]
        return bool(int(await self._start(keys=[self.key], args=args)))

    async def start_recheck(self, callback: str, after: float) -> bool:
        args: list[str | int | float] = [callback, after, self.stale]
        return bool(int(await self._recheck(keys=[self.key], args=args)))

    async def record(self, callback: str, same: bool, page: str = "") -> Choice:
        mode, agree, disagree, probes, checked = await self._record(
            keys=[self.key], args=[callback, "1" if same else "0", self.sample, page]
        )
        return Choice(
            _text(mode),  # type: ignore[arg-type]  # a Mode (_RECORD)
            int(agree),
            int(disagree),
            int(probes),
            float(checked),
        )

    async def agreed(self, callback: str, page: str, within: float) -> bool:
        found = await self.server.hget(self.key, f"{callback}:agreed:{page}")
        return found is not None and time.time() - float(found) < within

    async def put_summary(self, ref: str, summary: str) -> None:
        async with self.server.pipeline(transaction=False) as pipe:
            pipe.hset(self.probes_key, ref, summary)
            pipe.expire(self.probes_key, PROBE_TTL)
            await pipe.execute()

    async def take_summary(self, ref: str) -> str | None:
        found = await self._take(keys=[self.probes_key], args=[ref])
        return None if found is None else _text(found)


class MemoryChoiceStore(ChoiceStore):
    def __init__(self, site: str, sample: int, stale: float = STALE_PROBES) -> None:
        super().__init__(site, sample, stale)
        self._choices: dict[str, Choice] = {}
        self._summaries: dict[str, str] = {}
        self._probes_at: dict[str, float] = {}
        self._recheck_at: dict[str, float] = {}  # a claimed recheck
        self._agreed: dict[tuple[str, str], float] = {}  # (callback, page) -> epoch s

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
        now, probes = time.monotonic(), choice.probes
        if probes >= self.sample:
            if now - self._probes_at.get(callback, 0.0) < self.stale:
                return False
            probes = 0
        self._probes_at[callback] = now
        self._choices[callback] = Choice("learning", choice.agree, choice.disagree, probes + 1)
        return True

    async def start_recheck(self, callback: str, after: float) -> bool:
        choice = self._choices.get(callback)
        now = time.time()
        if choice is None or choice.mode != "plain":
            return False
        if now - choice.checked < after:
            return False
        if now - self._recheck_at.get(callback, 0.0) < self.stale:
            return False
        self._recheck_at[callback] = now
        return True

    async def record(self, callback: str, same: bool, page: str = "") -> Choice:
        before = self._choices.get(callback, Choice("learning"))
        if before.mode == "learning" and same and page:
            self._agreed[(callback, page)] = time.time()
        choice = next_choice(before, same, self.sample)
        choice = replace(choice, checked=time.time())
        self._choices[callback] = choice
        self._recheck_at.pop(callback, None)
        return choice

    async def agreed(self, callback: str, page: str, within: float) -> bool:
        at = self._agreed.get((callback, page))
        return at is not None and time.time() - at < within
