"""Change detection: is an item new, changed or unchanged since the site was last crawled?

The one place verdicts are made. ``ChangeState`` is the backend interface (coalesced
batches, the rule in ``decide``); ``ChangeDetector`` keeps the state in Redis, shared by
every worker, one Lua script per batch (two workers racing on one key agree); without
Redis ``core.store.state.DocumentState`` reads it back from the stored documents. A key
keeps its strongest verdict within a job (at-least-once delivery); ``seen`` counts an
item seen without its content. Volatile fields are not hashed (``core.items_schema``).

Reads/writes: ``SiteKeys.item_hashes`` / ``item_first_seen`` / ``item_last_changed`` and the
job's ``job_verdicts``, ``job_new``, ``job_changed``, stats. Keys and rules:
docs/pipelines.md "Dedup and change detection".
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import redis
import redis.asyncio
import redis.asyncio.cluster

from core.figures.stats import STATS_TTL_SECONDS
from core.keys import REDIS_ERRORS, SiteKeys
from core.lua import load_script
from core.redis_client import AsyncClient, Client

NEW, CHANGED, UNCHANGED = "new", "changed", "unchanged"
VERDICTS = (NEW, CHANGED, UNCHANGED)

# Lua, each script headed by its KEYS and ARGV: core/dedup/lua/{classify,seen,unsee}.lua
_CLASSIFY = load_script("core.dedup", "classify")
_SEEN = load_script("core.dedup", "seen")
_UNSEE = load_script("core.dedup", "unsee")


@dataclass(frozen=True)
class ItemState:
    """An item's verdict in a job and the timestamps its stored document must carry."""

    key: str
    verdict: str
    content_hash: str
    first_seen_ms: int
    last_changed_ms: int
    seen_ms: int


@dataclass(frozen=True)
class Known:
    """What is known of an item key from earlier crawls."""

    content_hash: str
    first_seen_ms: int
    last_changed_ms: int


@dataclass(frozen=True)
class JobChanges:
    """What a job found: the keys of new and changed items, and exact counts."""

    site: str
    job_id: str
    new: frozenset[str]
    changed: frozenset[str]
    counts: dict[str, int]

    @property
    def new_or_changed(self) -> frozenset[str]:
        return self.new | self.changed


def now_ms() -> int:
    return int(time.time() * 1000)


def decide(
    key: str, known: Known | None, digest: str, seen_ms: int, prior: str | None = None
) -> ItemState:
    """The rule: no earlier hash -> new; another hash -> changed (``last_changed`` moves);
    the same -> unchanged. ``prior``: the key's verdict earlier in the same job, which it
    keeps if stronger (new > changed > unchanged): a re-delivered item is not demoted.
    (``_CLASSIFY`` is this rule in Lua, atomic in Redis.)"""
    if known is None:
        verdict, first, changed = NEW, seen_ms, seen_ms
    elif known.content_hash != digest:
        verdict, first, changed = CHANGED, known.first_seen_ms, seen_ms
    else:
        verdict, first, changed = UNCHANGED, known.first_seen_ms, known.last_changed_ms
    if prior is not None and _STRENGTH[prior] > _STRENGTH[verdict]:
        verdict = prior
    return ItemState(key, verdict, digest, first, changed, seen_ms)


_STRENGTH = {UNCHANGED: 0, CHANGED: 1, NEW: 2}


class ChangeState(ABC):
    """Where dedup's knowledge of item keys lives, and the one place verdicts are made.

    ``classify`` calls made while a batch is in flight are coalesced into the next
    batch (``classify_batch``): hundreds of items in flight cost a few round trips
    instead of one each. ``transient_errors``: what the caller retries (the backend is
    unreachable), not a verdict about the data.
    """

    max_batch = 500
    transient_errors: tuple[type[BaseException], ...] = ()
    description = ""

    def __init__(self) -> None:
        self._queue: list[Request] = []
        self._sender: asyncio.Task[None] | None = None

    async def classify(
        self,
        job_id: str,
        key: str,
        content_hash: str,
        *,
        seen_ms: int | None = None,
        incomplete: Sequence[str] = (),
    ) -> ItemState:
        """The item's verdict in ``job_id`` (backend errors propagate: the caller retries).

        ``seen_ms``: when it was seen; None: now, by the backend's clock (a shared one
        where there is one: Redis' ``TIME``, never a worker's). ``incomplete``: the
        parts the item was scraped without (recorded in the job's ledger by backends
        that keep one)."""
        loop = asyncio.get_running_loop()
        request = Request(
            job_id, key, content_hash, seen_ms, loop.create_future(), tuple(incomplete)
        )
        state = await self._enqueue(request)
        assert state is not None, "only a seen request may find its key unknown"
        return state

    async def _enqueue(self, request: Request) -> ItemState | None:
        self._queue.append(request)
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._send_queued())
        return await request.future

    async def seen(self, job_id: str, key: str, *, seen_ms: int | None = None) -> ItemState | None:
        """An item seen unchanged without its content (a 304, an unchanged listing card):
        its verdict in ``job_id`` (``unchanged``, or a stronger one the key already has
        in the job), counted like ``classify``'s. None: the key is unknown (its state is
        gone), nothing is counted and the caller fetches the item in full. Coalesced
        into the same batches as ``classify``."""
        loop = asyncio.get_running_loop()
        request = Request(job_id, key, "", seen_ms, loop.create_future(), seen=True)
        return await self._enqueue(request)

    @abstractmethod
    async def unsee(self, job_id: str, key: str) -> bool:
        """Take back the ``unchanged`` a ``seen`` counted for ``key`` in ``job_id`` (its
        stored document is gone: the item is fetched in full instead). Only while that is
        the key's verdict in the job and nothing of it was stored in the job; True if
        taken back. Rare, so not batched."""

    async def classify_many(
        self, job_id: str, entries: Sequence[tuple[str, str]], *, seen_ms: int | None = None
    ) -> list[ItemState]:
        """Classify ``(key, content hash)`` pairs (in order)."""
        return list(
            await asyncio.gather(
                *(self.classify(job_id, key, digest, seen_ms=seen_ms) for key, digest in entries)
            )
        )

    @abstractmethod
    async def classify_batch(self, batch: Sequence[Request]) -> list[ItemState | Exception | None]:
        """Verdicts of ``batch`` in order (an exception per request that failed; None
        for a ``seen`` request whose key is unknown)."""

    async def _send_queued(self) -> None:
        while self._queue:
            batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
            results: list[ItemState | Exception | None]
            try:
                results = await self.classify_batch(batch)
            except Exception as exc:
                results = [exc] * len(batch)
            for request, result in zip(batch, results, strict=True):
                if request.future.done():
                    continue
                if isinstance(result, Exception):
                    request.future.set_exception(result)
                else:
                    request.future.set_result(result)


@dataclass
class Request:
    """One queued classification (``seen``: of an item seen without its content)."""

    job_id: str
    key: str
    content_hash: str  # empty for a seen item: the backend knows the stored one
    seen_ms: int | None  # None: the backend's clock
    future: asyncio.Future[ItemState | None]
    incomplete: tuple[str, ...] = ()
    seen: bool = False


class ChangeDetector(ChangeState):
    """Dedup state in Redis (asyncio client: it runs inside Scrapy's event loop).

    Shared by every worker of the site; the Lua script updates the per-site state, the
    job's verdicts, new/changed sets and exact counts atomically.
    """

    transient_errors = REDIS_ERRORS

    def __init__(self, server: AsyncClient, site: str, *, job_ttl: int = STATS_TTL_SECONDS) -> None:
        super().__init__()
        self.server = server
        self.site = site
        self.keys = SiteKeys(site)
        self.job_ttl = job_ttl
        self.description = f"redis {self.keys.item_hashes}"
        self._script = server.register_script(_CLASSIFY)
        self._seen_script = server.register_script(_SEEN)

    def _keys(self, job_id: str) -> list[str]:
        k = self.keys
        return [
            k.item_hashes,
            k.item_first_seen,
            k.item_last_changed,
            k.job_verdicts(job_id),
            k.job_new(job_id),
            k.job_changed(job_id),
            k.stats(job_id),
            k.job_incomplete(job_id),
            k.job_invalid(job_id),
        ]

    async def unsee(self, job_id: str, key: str) -> bool:
        k = self.keys
        keys = [k.job_verdicts(job_id), k.stats(job_id), k.job_stored(job_id)]
        return bool(await self.server.eval(_UNSEE, len(keys), *keys, key))

    async def classify_batch(self, batch: Sequence[Request]) -> list[ItemState | Exception | None]:
        async with self.server.pipeline(transaction=False) as pipe:
            for r in batch:
                keys = self._keys(r.job_id)
                now = "" if r.seen_ms is None else r.seen_ms
                if r.seen:
                    source, script = _SEEN, self._seen_script
                    args = [r.key, now, self.job_ttl]
                else:
                    source, script = _CLASSIFY, self._script
                    args = [r.key, r.content_hash, now, self.job_ttl, ",".join(r.incomplete)]
                # A cluster pipeline refuses EVALSHA (redis-py cannot route a script's
                # load): there the script goes as EVAL, which Redis caches by its hash.
                if isinstance(pipe, redis.asyncio.cluster.ClusterPipeline):
                    pipe.eval(source, len(keys), *keys, *args)
                else:
                    await script(keys=keys, args=args, client=pipe)
            raws = await pipe.execute(raise_on_error=False)
        return [
            raw if isinstance(raw, Exception) else _state(r.key, r.content_hash, raw)
            for r, raw in zip(batch, raws, strict=True)
        ]


def _state(key: str, digest: str, raw: list[bytes | str | int]) -> ItemState | None:
    """A script's answer: ``{verdict, first, changed, now}`` (``_SEEN`` adds the stored
    hash), or ``{'unknown'}``."""
    values = [_text(value) for value in raw]
    if values == ["unknown"]:
        return None
    verdict, first, changed, seen = values[:4]
    return ItemState(
        key=key,
        verdict=verdict,
        content_hash=values[4] if len(values) > 4 else digest,
        first_seen_ms=int(first),
        last_changed_ms=int(changed),
        seen_ms=int(seen),
    )


def _text(value: bytes | str | int) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


# -- reading (sync: for flows, the LLM step, alerts and tests) ------------------------------


def job_changes(server: Client, site: str, job_id: str) -> JobChanges:
    """The job's new and changed item keys, and its exact new/changed/unchanged counts."""
    keys = SiteKeys(site)
    with server.pipeline(transaction=True) as pipe:
        pipe.smembers(keys.job_new(job_id))
        pipe.smembers(keys.job_changed(job_id))
        pipe.hmget(keys.stats(job_id), [f"items/{verdict}" for verdict in VERDICTS])
        new, changed, counts = pipe.execute()
    return JobChanges(
        site=site,
        job_id=job_id,
        new=frozenset(_text(key) for key in new),
        changed=frozenset(_text(key) for key in changed),
        counts={verdict: int(value or 0) for verdict, value in zip(VERDICTS, counts, strict=True)},
    )


def stored_state(server: redis.Redis, site: str, key: str) -> tuple[str, int, int] | None:
    """``(content hash, first_seen ms, last_changed ms)`` of a key, None if never seen."""
    keys = SiteKeys(site)
    with server.pipeline(transaction=False) as pipe:
        pipe.hget(keys.item_hashes, key)
        pipe.hget(keys.item_first_seen, key)
        pipe.hget(keys.item_last_changed, key)
        digest, first, changed = pipe.execute()
    if digest is None:
        return None
    return _text(digest), int(first or 0), int(changed or first or 0)
