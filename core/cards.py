"""Listing cards that stand for their items: fetch a detail page, or skip it?

A site's profile may name the fields of its listing cards that reflect the item (price,
title, availability, rating, ...). Per site, Redis keeps for each item key the hash of
its card at the item's last FULL fetch (its page parsed and the complete item durable),
when (Redis' clock) and in which run (``SiteKeys.card_state``). A run is a job; its
sequence number is assigned once per job id, atomically, so every worker of a job gets
the same one (``SiteKeys.job_seq`` / ``job_seq_of``).

A card is skipped (its item counted unchanged without fetching its page) only when all
of these hold (``decide``, the rule):

* its hash equals the one recorded at the item's last full fetch,
* the item is still known to dedup (``item_hashes``): an item whose state is gone is
  fetched in full, never counted unchanged,
* that fetch is younger than ``max_age_days``,
* this run is not the item's rolling-refresh run: ``(slot(key) + run) % N == 0``, so
  about 1/N of the items are fetched in full each run,
* fewer than N runs have passed since that fetch (covers items that missed their slot).

Framework-free: one Lua script reads what the rule needs for a listing page's cards in
one round trip (``CardState.decide``); another records full fetches after the items are
durable (``CardState.record``), idempotent per (key, job). Every key of a call is one
site's (hash tag ``{site}``): the scripts work on a Redis Cluster as on one Redis.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core import redis_client
from core.items_schema import content_hash
from core.keys import REDIS_ERRORS, SiteKeys
from core.redis_client import AsyncClient

# Why a card's detail page is fetched.
NEW = "new"  # no card recorded for the item
UNKNOWN = "unknown"  # a card is recorded, but dedup no longer knows the item
CHANGED = "changed"  # the card differs from the one at the last full fetch
TOO_OLD = "too_old"  # the last full fetch is older than max_age_days
REFRESH = "refresh"  # the rolling refresh: the item's slot, or N runs since its fetch
REASONS = (NEW, UNKNOWN, CHANGED, TOO_OLD, REFRESH)

DAY_MS = 86_400_000

# The run of a job: assigned once per job id (every worker of the job gets the same).
# Needs KEYS[1] job_seq, KEYS[2] job_seq_of and ARGV[1] job id; sets ``run``.
_RUN = """
local run = redis.call('HGET', KEYS[2], ARGV[1])
if not run then
  run = redis.call('INCR', KEYS[1])
  redis.call('HSET', KEYS[2], ARGV[1], run)
end
run = tonumber(run)
"""

# KEYS: job_seq, job_seq_of, card_state, item_hashes
# ARGV: job id, item keys...
# -> {now ms, run, record 1 (or false), known 1 (0/1), record 2, known 2, ...}
_DECIDE = (
    _RUN
    + """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {now, run}
for i = 2, #ARGV do
  table.insert(out, redis.call('HGET', KEYS[3], ARGV[i]) or false)
  table.insert(out, redis.call('HEXISTS', KEYS[4], ARGV[i]))
end
return out
"""
)

# Idempotent per (key, job): a record of the same run and hash is kept as it is (a
# re-delivered item does not move its time), and a later run's record is never replaced
# by an earlier run's (a late re-delivery of an old job).
# KEYS: job_seq, job_seq_of, card_state
# ARGV: job id, key 1, card hash 1, key 2, card hash 2, ...
# -> the number of records written
_RECORD = (
    _RUN
    + """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local written = 0
for i = 2, #ARGV, 2 do
  local old = redis.call('HGET', KEYS[3], ARGV[i])
  local keep = false
  if old then
    local hash, _, old_run = string.match(old, '^(.*):(%d+):(%d+)$')
    old_run = tonumber(old_run)
    if old_run and (old_run > run or (old_run == run and hash == ARGV[i + 1])) then
      keep = true
    end
  end
  if not keep then
    redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1] .. ':' .. now .. ':' .. run)
    written = written + 1
  end
end
return written
"""
)


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
    """An item's card at its last full fetch."""

    card_hash: str
    fetched_ms: int  # Redis' clock
    run: int

    def encode(self) -> str:
        return f"{self.card_hash}:{self.fetched_ms}:{self.run}"

    @classmethod
    def decode(cls, raw: bytes | str | None) -> CardRecord | None:
        """None for no record, or one this module did not write (then: fetch)."""
        if raw is None:
            return None
        text = raw.decode() if isinstance(raw, bytes) else raw
        card_hash, _, rest = text.rpartition(":")
        card_hash, _, fetched = card_hash.rpartition(":")
        if not card_hash or not fetched.isdigit() or not rest.isdigit():
            return None
        return cls(card_hash, int(fetched), int(rest))


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


def decide(
    key: str,
    digest: str,
    record: CardRecord | None,
    known: bool,
    now_ms: int,
    run: int,
    policy: CardPolicy,
) -> Decision:
    """Fetch or skip the card ``digest`` of item ``key`` in run ``run`` at ``now_ms``.

    ``record``: the card at the item's last full fetch (None: none); ``known``: dedup
    still has the item's state.
    """
    if record is None:
        reason: str | None = NEW
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

    async def _eval(self, script: Any, source: str, keys: list[str], args: list[Any]) -> Any:
        # Both scripts are idempotent, so a lost connection is retried here, briefly (the
        # platform's clients do not retry: this is the hop's one retry layer). A burst of
        # new connections to a cluster node loses one now and then.
        for attempt in range(EVAL_ATTEMPTS):
            try:
                if self._cluster:
                    return await self.server.eval(source, len(keys), *keys, *args)  # type: ignore[misc]
                return await script(keys=keys, args=args)
            except REDIS_ERRORS:
                if attempt == EVAL_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(EVAL_BACKOFF * 2**attempt)
        raise AssertionError("unreachable")

    async def decide(
        self, job_id: str, cards: Sequence[tuple[str, str]], policy: CardPolicy
    ) -> list[Decision]:
        """The decision for each ``(item key, card hash)`` of a listing page, in order:
        one round trip (the job's run assigned on first use)."""
        if not cards:
            return []
        k = self.keys
        keys = [k.job_seq, k.job_seq_of, k.card_state, k.item_hashes]
        raw = await self._eval(self._decide, _DECIDE, keys, [job_id, *(key for key, _ in cards)])
        now_ms, run = int(raw[0]), int(raw[1])
        return [
            decide(
                key,
                digest,
                CardRecord.decode(raw[2 + 2 * i] or None),
                bool(int(raw[3 + 2 * i])),
                now_ms,
                run,
                policy,
            )
            for i, (key, digest) in enumerate(cards)
        ]

    async def record(self, job_id: str, entries: Sequence[tuple[str, str]]) -> int:
        """Record ``(item key, card hash)`` pairs as fully fetched in ``job_id`` now
        (Redis' clock): call it only once each item is durable and complete. Returns
        how many records were written (a re-delivery in the same job writes none)."""
        if not entries:
            return 0
        k = self.keys
        keys = [k.job_seq, k.job_seq_of, k.card_state]
        args: list[str] = [job_id]
        for key, digest in entries:
            args += [key, digest]
        return int(await self._eval(self._record, _RECORD, keys, args))

    async def run_of(self, job_id: str) -> int:
        """The job's run sequence number (assigned now if it has none)."""
        k = self.keys
        raw = await self._eval(
            self._decide, _DECIDE, [k.job_seq, k.job_seq_of, k.card_state, k.item_hashes], [job_id]
        )
        return int(raw[1])
