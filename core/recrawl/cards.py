"""Listing cards that stand for their items: fetch a detail page, or skip it?

Per site, Redis keeps each item's card hash at its last full fetch, when, in which run and
under which layout (``SiteKeys.card_state``; run numbers per job from ``SiteKeys.job_seq``).
``decide`` is the rule for skipping a card (same hash, item known to dedup, record young
enough, not the item's rolling-refresh run, same layout, the job still skipping the page
type); ``CardState`` runs it, records skips and full fetches in Lua, one round trip per
listing page, every key under the site's hash tag. No Scrapy here.

Reads: Redis (the site's card state, ``item_hashes``, the job's keys). The rule, its
settings and counters: docs/recrawl.md "Skipping detail pages whose listing card did not
change".
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core import redis_client
from core.figures.stats import STATS_TTL_SECONDS
from core.items_schema import content_hash
from core.keys import REDIS_ERRORS, SiteKeys
from core.lua import load_script
from core.redis_client import AsyncClient

# Why a card's detail page is fetched.
NEW = "new"  # no card recorded for the item
UNKNOWN = "unknown"  # a card is recorded, but dedup no longer knows the item
CHANGED = "changed"  # the card differs from the one at the last full fetch
TOO_OLD = "too_old"  # the last full fetch is older than max_age_days
REFRESH = "refresh"  # the rolling refresh: the item's slot, or N runs since its fetch
LAYOUT = "layout"  # recorded under another accepted baseline (or before layouts were kept)
UNPARSED = "unparsed"  # the job met item pages of this kind it could not parse
REASONS = (NEW, UNPARSED, LAYOUT, UNKNOWN, CHANGED, TOO_OLD, REFRESH)

DAY_MS = 86_400_000


# Lua, each script headed by its KEYS and ARGV: core/recrawl/lua/card_*.lua
_DECIDE = load_script("core.recrawl", "card_decide")
_RECORD = load_script("core.recrawl", "card_record")
_SKIP = load_script("core.recrawl", "card_skip")
_STOP = load_script("core.recrawl", "card_stop")


@dataclass(frozen=True)
class CardPolicy:
    """The profile's ``[recrawl]`` limits: ``max_age_days`` and ``refresh_runs`` (N)."""

    max_age_days: float
    refresh_runs: int

    def __post_init__(self) -> None:
        if self.max_age_days <= 0 or self.refresh_runs < 1:
            raise ValueError("max_age_days must be > 0 and refresh_runs >= 1")

    @property
    def max_age_ms(self) -> float:
        return self.max_age_days * DAY_MS


@dataclass(frozen=True)
class CardRecord:
    """An item's card at its last full fetch, and the layout it was made under (None: a
    record made before layouts were kept, which no layout matches)."""

    card_hash: str
    fetched_ms: int  # Redis' clock
    run: int
    layout: str | None = None

    def encode(self) -> str:
        text = f"{self.card_hash}:{self.fetched_ms}:{self.run}"
        return text if self.layout is None else f"{text}:L{self.layout}"

    @classmethod
    def decode(cls, raw: bytes | str | None) -> CardRecord | None:
        """None for no record, or one this module did not write (then: fetch)."""
        if raw is None:
            return None
        text = raw.decode() if isinstance(raw, bytes) else raw
        layout = None
        rest, _, last = text.rpartition(":")
        if last.startswith("L"):
            text, layout = rest, last[1:]
        card_hash, _, run = text.rpartition(":")
        card_hash, _, fetched = card_hash.rpartition(":")
        if not card_hash or not fetched.isdigit() or not run.isdigit():
            return None
        return cls(card_hash, int(fetched), int(run), layout)


@dataclass(frozen=True)
class Decision:
    """Fetch a card's detail page or not; ``reason`` says why it is fetched (None: skip).

    ``full``: fetched without the page's validators (no conditional GET), so that it ends
    in a parsed, recorded full fetch. Every fetch but a changed card's is one: a 304 would
    leave the card unrecorded (a changed card's page answers 200 anyway).
    """

    key: str
    card_hash: str
    reason: str | None

    @property
    def fetch(self) -> bool:
        return self.reason is not None

    @property
    def full(self) -> bool:
        return self.reason is not None and self.reason != CHANGED


# -- the rule (pure) -----------------------------------------------------------------------


def card_hash(fields: Mapping[str, Any]) -> str:
    """The hash of a card's fields, their names included: naming other card fields in
    the profile makes every card differ once (fetched), never match by accident."""
    return content_hash(dict(fields))


def key_slot(key: str) -> int:
    """A stable number of an item key (the same on every worker and every run)."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=4).digest(), "big")


def refresh_due(key: str, run: int, refresh_runs: int) -> bool:
    """The rolling refresh: the item's run out of every ``refresh_runs`` consecutive ones."""
    return (key_slot(key) + run) % refresh_runs == 0


@dataclass(frozen=True)
class JobView:
    """What a job's decisions share: its run, its time and layout, and whether it stopped
    skipping the page type (an item page of it it could not parse)."""

    now_ms: int
    run: int
    layout: str
    stopped: bool = False


def decide(
    key: str,
    digest: str,
    record: CardRecord | None,
    known: bool,
    job: JobView,
    policy: CardPolicy,
) -> Decision:
    """Fetch or skip the card ``digest`` of item ``key`` in the job ``job``.

    ``record``: the card at the item's last full fetch (None: none); ``known``: dedup
    still has the item's state.
    """
    now_ms, run = job.now_ms, job.run
    if record is None:
        reason: str | None = NEW
    elif job.stopped:
        reason = UNPARSED
    elif record.layout != job.layout:
        reason = LAYOUT
    elif not known:
        reason = UNKNOWN
    elif record.card_hash != digest:
        reason = CHANGED
    elif now_ms - record.fetched_ms >= policy.max_age_ms:
        reason = TOO_OLD
    elif refresh_due(key, run, policy.refresh_runs) or run - record.run >= policy.refresh_runs:
        reason = REFRESH
    else:
        reason = None
    return Decision(key, digest, reason)


# -- the state in Redis --------------------------------------------------------------------


EVAL_ATTEMPTS = 3
EVAL_BACKOFF = 0.05  # seconds, doubling


class CardState:
    """A site's card records in Redis (asyncio client: it runs in the crawl's loop).

    A lost connection is retried twice, briefly; Redis errors after that propagate: the
    caller fails open (fetches every card) and counts them.
    """

    def __init__(self, server: AsyncClient, site: str) -> None:
        self.server = server
        self.site = site
        self.keys = SiteKeys(site)
        # A cluster client routes EVAL by its first key (every key here is the site's
        # slot); a single Redis runs the cached script by its hash.
        self._cluster = redis_client.is_cluster(server)
        self._decide = server.register_script(_DECIDE)
        self._record = server.register_script(_RECORD)
        self._skip = server.register_script(_SKIP)
        self._stop = server.register_script(_STOP)

    async def _eval(self, script: Any, source: str, keys: list[str], args: list[Any]) -> Any:
        # Every script is idempotent, so a lost connection is retried here, briefly (the
        # platform's clients do not retry: this is the hop's one retry layer). A burst of
        # new connections to a cluster node loses one now and then.
        for attempt in range(EVAL_ATTEMPTS):
            try:
                if self._cluster:
                    return await self.server.eval(source, len(keys), *keys, *args)
                return await script(keys=keys, args=args)
            except REDIS_ERRORS:
                if attempt == EVAL_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(EVAL_BACKOFF * 2**attempt)
        raise AssertionError("unreachable")

    def _decide_keys(self, job_id: str) -> list[str]:
        k = self.keys
        return [
            k.job_seq,
            k.job_seq_of,
            k.card_state,
            k.item_hashes,
            k.job_layout(job_id),
            k.job_unparsed(job_id),
        ]

    async def decide(
        self,
        job_id: str,
        cards: Sequence[tuple[str, str]],
        policy: CardPolicy,
        *,
        callback: str,
        layout: str,
    ) -> list[Decision]:
        """The decision for each ``(item key, card hash)`` of a listing page, in order:
        one round trip (the job's run assigned on first use). ``callback``: the spider
        method parsing the cards' pages; ``layout``: this worker's baseline id, for a job
        the producer recorded none for."""
        if not cards:
            return []
        args = [job_id, layout, callback, *(key for key, _ in cards)]
        raw = await self._eval(self._decide, _DECIDE, self._decide_keys(job_id), args)
        job = JobView(int(raw[0]), int(raw[1]), _text(raw[2]), bool(int(raw[3])))
        return [
            decide(
                key,
                digest,
                CardRecord.decode(raw[4 + 2 * i] or None),
                bool(int(raw[5 + 2 * i])),
                job,
                policy,
            )
            for i, (key, digest) in enumerate(cards)
        ]

    async def skip(self, job_id: str, callback: str, pages: Sequence[tuple[str, str]]) -> bool:
        """Keep a listing page's skips (``(item key, page)``: what to fetch should the job
        stop skipping ``callback``); False when it stopped meanwhile: fetch them all."""
        keys = [self.keys.job_unparsed(job_id), self.keys.job_skipped(job_id, callback)]
        args: list[str | int] = [callback, STATS_TTL_SECONDS]
        for key, page in pages:
            args += [key, page]
        return bool(int(await self._eval(self._skip, _SKIP, keys, args)))

    async def stop(self, job_id: str, callback: str, token: str) -> list[tuple[str, str]]:
        """The job stops skipping ``callback``'s pages: the ``(item key, page)`` it skipped
        so far, to fetch now (empty for any caller but the first, ``token``)."""
        k = self.keys
        skipped = k.job_skipped(job_id, callback)
        keys = [k.job_unparsed(job_id), skipped, f"{skipped}:taken"]
        raw = await self._eval(self._stop, _STOP, keys, [callback, STATS_TTL_SECONDS, token])
        pairs = [(_text(raw[i]), _text(raw[i + 1])) for i in range(0, len(raw), 2)]
        return [(key, page) for key, page in pairs if key != "__taken_by"]

    async def record(self, job_id: str, entries: Sequence[tuple[str, str]], *, layout: str) -> int:
        """Record ``(item key, card hash)`` pairs as fully fetched in ``job_id`` now
        (Redis' clock), under the job's layout (``layout``: the worker's, for a job the
        producer recorded none for): call it only once each item is durable and
        complete. Returns how many records were written (a re-delivery in the same job
        writes none)."""
        if not entries:
            return 0
        k = self.keys
        keys = [k.job_seq, k.job_seq_of, k.card_state, k.job_layout(job_id)]
        args: list[str] = [job_id, layout]
        for key, digest in entries:
            args += [key, digest]
        return int(await self._eval(self._record, _RECORD, keys, args))

    async def run_of(self, job_id: str) -> int:
        """The job's run sequence number (assigned now if it has none)."""
        raw = await self._eval(self._decide, _DECIDE, self._decide_keys(job_id), [job_id, "", ""])
        return int(raw[1])


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
