"""Store items into Elasticsearch: bulk upserts, deterministic ids, nothing lost.

Index layout, per site and item type (names from ``IndexLayout``)::

    items-<site>-<type>-v1   concrete index, created from the composable index template
                             items-<site>-<type> = component templates items-common +
                             items-type-<type> (mapping derived from the item's schema)
    items-<site>-<type>      write alias (is_write_index): every write goes through it,
                             with require_alias, so a missing alias never auto-creates an
                             index with a dynamic mapping
    items-<site>             read alias over all of the site's item types (never written)

Each item is one document, ``_id`` = its item key (``<site>:<type>:<stable id>``). Every
write is a full ``index`` operation with ``version_type=external_gte`` and
``version = last_seen`` (epoch ms): re-sending a write (retry, spill replay, a worker
killed before its ack) is idempotent, and a stale write that arrives after a newer one
is refused by Elasticsearch (409, counted as ``superseded``) instead of overwriting it.
``first_seen`` and ``last_changed`` come from the dedup state in Redis
(``core.dedup``), so without painless scripts the document still gets
first_seen = set once, last_changed = moves only on a content change, last_seen = every
crawl. Without dedup state (no Redis) they are derived from the stored document
(one ``mget`` per bulk).

Durability (``ItemStore``): ``put()`` returns only when the item is durable: accepted by
Elasticsearch, written to the spill (a Redis list per site, or a file without Redis), or,
if Elasticsearch rejects it for good (a mapping error), recorded in the dead-letter list.
Writes are buffered and sent with ``elasticsearch.helpers.async_streaming_bulk`` when
``bulk_size`` documents are waiting or the oldest has waited ``flush_interval`` seconds.
Items a bulk did not store are retried per item with backoff; after ``spill_after``
seconds of failures (Elasticsearch down) or ``max_item_retries`` attempts they go to the
spill, and while Elasticsearch stays down new items go straight there. The spill is
drained back into Elasticsearch by every store's background loop (any worker, any
process: a lock makes one drainer at a time) and at close.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import enum
import fcntl
import hashlib
import json
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import redis
import redis.asyncio
from elastic_transport import TransportError
from elasticsearch import (
    ApiError,
    AsyncElasticsearch,
    BadRequestError,
    Elasticsearch,
    NotFoundError,
)
from elasticsearch.helpers import async_streaming_bulk

from core.items_schema import DATE, KEYWORD, UnknownItemType, schema_by_type
from core.keys import REDIS_ERRORS, SiteKeys

logger = logging.getLogger(__name__)

# ES refuses longer ids (512 bytes); such keys (long URLs) are hashed instead.
MAX_ID_BYTES = 512
# Rejections for good: the document itself does not fit the mapping. Everything else
# (unavailable shards, blocks, closed or missing indices, 429s, timeouts) is retried.
PERMANENT_ERRORS = frozenset(
    {
        "mapper_parsing_exception",
        "document_parsing_exception",
        "strict_dynamic_mapping_exception",
        "illegal_argument_exception",
        "mapper_exception",
        "action_request_validation_exception",
    }
)
DEAD_LETTER_CAP = 100_000
SPILL_ERRORS = (*REDIS_ERRORS, OSError)  # Redis spill, file spill

_E = TypeVar("_E")

COMMON_PROPERTIES: dict[str, Any] = {
    "item_key": dict(KEYWORD),
    "site": dict(KEYWORD),
    "item_type": dict(KEYWORD),
    "job_id": dict(KEYWORD),
    "content_hash": dict(KEYWORD),
    "first_seen": dict(DATE),
    "last_seen": dict(DATE),
    "last_changed": dict(DATE),
}


# -- names and index management --------------------------------------------------------------


class IndexLayout:
    """Index, alias and template names (see the module docstring)."""

    common_component = "items-common"
    version = 1

    @staticmethod
    def index(site: str, item_type: str, version: int = 1) -> str:
        return f"items-{site}-{item_type}-v{version}"

    @staticmethod
    def write_alias(site: str, item_type: str) -> str:
        return f"items-{site}-{item_type}"

    @staticmethod
    def read_alias(site: str) -> str:
        return f"items-{site}"

    @staticmethod
    def template(site: str, item_type: str) -> str:
        return f"items-{site}-{item_type}"

    @staticmethod
    def type_component(item_type: str) -> str:
        return f"items-type-{item_type}"


def doc_id_for(key: str) -> str:
    """The deterministic ``_id`` of an item key: the key itself unless it is too long."""
    if len(key.encode()) <= MAX_ID_BYTES:
        return key
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()


def iso_ms(epoch_ms: int) -> str:
    moment = dt.datetime.fromtimestamp(epoch_ms / 1000, tz=dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def epoch_ms(iso: str) -> int:
    return int(dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


async def ensure_item_index(
    es: AsyncElasticsearch,
    site: str,
    item_type: str,
    properties: Mapping[str, Any] | None,
    *,
    replicas: int = 0,
) -> None:
    """Templates, concrete index and aliases of ``site``/``item_type``; idempotent.

    With ``properties`` (the item schema's mapping) everything is (re)declared and new
    fields are added to the existing index. Without them (a process that does not know
    the item type, e.g. draining another worker's spill) the write alias must exist.
    """
    layout = IndexLayout
    write_alias = layout.write_alias(site, item_type)
    if properties is None:
        if await es.indices.exists_alias(name=write_alias):
            return
        raise UnknownItemType(
            f"{write_alias} does not exist and item type {item_type!r} is not declared here "
            "(import crawlers.items)"
        )
    await es.cluster.put_component_template(
        name=layout.common_component,
        template={"mappings": {"dynamic": "strict", "properties": COMMON_PROPERTIES}},
        meta={"managed_by": "core.store", "what": "fields every item document carries"},
    )
    await es.cluster.put_component_template(
        name=layout.type_component(item_type),
        template={"mappings": {"properties": dict(properties)}},
        meta={"managed_by": "core.store", "item_type": item_type},
    )
    index = layout.index(site, item_type, layout.version)
    await es.indices.put_index_template(
        name=layout.template(site, item_type),
        index_patterns=[f"items-{site}-{item_type}-v*"],
        composed_of=[layout.common_component, layout.type_component(item_type)],
        priority=200,
        template={
            "settings": {
                "number_of_shards": 1,
                "number_of_replicas": replicas,
                "refresh_interval": "1s",
            }
        },
        meta={"managed_by": "core.store", "site": site, "item_type": item_type},
    )
    aliases = {
        write_alias: {"is_write_index": True},
        # Explicitly not a write index: a stray write to the read alias fails loudly.
        layout.read_alias(site): {"is_write_index": False},
    }
    try:
        await es.indices.create(index=index, aliases=aliases)
    except BadRequestError as exc:
        if exc.error != "resource_already_exists_exception":
            raise
        await es.indices.put_mapping(index=index, properties={**COMMON_PROPERTIES, **properties})
        if not await es.indices.exists_alias(name=write_alias, index=index):
            await es.indices.update_aliases(
                actions=[
                    {"add": {"index": index, "alias": name, **spec}}
                    for name, spec in aliases.items()
                ]
            )


# -- actions ----------------------------------------------------------------------------------


@dataclass
class StoreAction:
    """One document write, JSON-serialisable so it can wait in the spill."""

    key: str
    site: str
    item_type: str
    doc_id: str
    index: str  # the write alias
    version: int  # external version = last_seen, epoch ms
    document: dict[str, Any]
    # No dedup state (no Redis): first_seen/last_changed are taken from the stored doc.
    needs_state: bool = False
    attempts: int = 0
    error: str | None = None

    def bulk_op(self) -> dict[str, Any]:
        return {
            "_op_type": "index",
            "_index": self.index,
            "_id": self.doc_id,
            "version": self.version,
            "version_type": "external_gte",
            "_source": self.document,
        }

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: bytes | str) -> StoreAction:
        return cls(**json.loads(raw))


def build_action(
    *,
    site: str,
    item_type: str,
    key: str,
    fields: Mapping[str, Any],
    content_hash: str,
    job_id: str | None,
    seen_ms: int,
    first_seen_ms: int | None = None,
    last_changed_ms: int | None = None,
) -> StoreAction:
    """The document write for an item (``fields``: its fields as plain data).

    ``first_seen_ms``/``last_changed_ms`` come from the dedup verdict; leave them out
    when there is none and they are resolved against the stored document at send time.
    """
    document = {name: value for name, value in fields.items() if name != "job_id"}
    document.update(
        item_key=key,
        site=site,
        item_type=item_type,
        job_id=job_id,
        content_hash=content_hash,
        last_seen=iso_ms(seen_ms),
    )
    needs_state = first_seen_ms is None or last_changed_ms is None
    if not needs_state:
        document["first_seen"] = iso_ms(first_seen_ms)  # type: ignore[arg-type]
        document["last_changed"] = iso_ms(last_changed_ms)  # type: ignore[arg-type]
    return StoreAction(
        key=key,
        site=site,
        item_type=item_type,
        doc_id=doc_id_for(key),
        index=IndexLayout.write_alias(site, item_type),
        version=seen_ms,
        document=document,
        needs_state=needs_state,
    )


class Outcome(enum.StrEnum):
    INDEXED = "indexed"
    SUPERSEDED = "superseded"  # a newer write of the same document was already there
    SPILLED = "spilled"
    DEAD_LETTER = "dead_letter"


class StoreUnavailable(RuntimeError):
    """Neither Elasticsearch nor the spill could take an item (only at close)."""


class DeadLettered(RuntimeError):
    """Elasticsearch rejected the document for good; it is kept in the dead-letter list."""


# -- spills -------------------------------------------------------------------------------------

SendFn = Callable[[list[StoreAction]], Awaitable[list[StoreAction]]]


class Spill(Protocol):
    """Durable storage for actions Elasticsearch has not accepted yet."""

    description: str

    async def push(self, actions: Sequence[StoreAction]) -> None: ...

    async def size(self) -> int: ...

    async def drain(self, send: SendFn, *, batch: int, max_batches: int | None = None) -> int:
        """Hand spilled actions to ``send`` (which returns those to keep); one drainer
        at a time. Returns how many left the spill."""
        ...

    async def dead_letter(self, action: StoreAction, error: str) -> None: ...


# KEYS: spill list, lock ; ARGV: lock token, entries handled, entries to keep...
_TRIM_IF_OWNER = """
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('LTRIM', KEYS[1], tonumber(ARGV[2]), -1)
for i = 3, #ARGV do redis.call('RPUSH', KEYS[1], ARGV[i]) end
return 1
"""


class RedisSpill:
    """``<site>:store:spill`` (list of JSON actions) and ``<site>:store:dead_letters``.

    Drain reads from the head without removing, sends, then trims what it sent, guarded
    by a lock token: a drainer that dies mid-way leaves every entry in place (re-sending
    is idempotent), and two drainers never trim each other's entries.
    """

    def __init__(
        self, server: redis.asyncio.Redis, site: str, *, lock_timeout: float = 120.0
    ) -> None:
        self.server = server
        self.keys = SiteKeys(site)
        self.lock_timeout = lock_timeout
        self.description = f"redis list {self.keys.store_spill}"
        self._trim = server.register_script(_TRIM_IF_OWNER)

    async def push(self, actions: Sequence[StoreAction]) -> None:
        if actions:
            await self.server.rpush(self.keys.store_spill, *[a.to_json() for a in actions])

    async def size(self) -> int:
        return int(await self.server.llen(self.keys.store_spill))

    async def drain(self, send: SendFn, *, batch: int, max_batches: int | None = None) -> int:
        token = uuid.uuid4().hex
        lock = self.server.lock(
            self.keys.store_spill_lock, timeout=self.lock_timeout, blocking=False
        )
        if not await lock.acquire(token=token):
            return 0  # another process is draining
        drained = 0
        try:
            batches = 0
            while max_batches is None or batches < max_batches:
                raws = await self.server.lrange(self.keys.store_spill, 0, batch - 1)
                if not raws:
                    break
                actions = [await self._parse(raw) for raw in raws]
                keep = await send([a for a in actions if a is not None])
                owned = await self._trim(
                    keys=[self.keys.store_spill, self.keys.store_spill_lock],
                    args=[token, len(raws), *[a.to_json() for a in keep]],
                )
                if not owned:
                    logger.warning("spill drain lost its lock; another drainer continues")
                    break
                drained += len(raws) - len(keep)
                batches += 1
                if keep:
                    break  # Elasticsearch still refuses some: try again later
                await lock.reacquire()
        finally:
            with contextlib.suppress(Exception):
                await lock.release()
        return drained

    async def _parse(self, raw: bytes) -> StoreAction | None:
        try:
            return StoreAction.from_json(raw)
        except (ValueError, TypeError) as exc:
            logger.error("undecodable spill entry moved to dead letters: %s", exc)
            await self._push_dead({"raw": raw.decode(errors="replace"), "error": str(exc)})
            return None

    async def dead_letter(self, action: StoreAction, error: str) -> None:
        await self._push_dead({"action": asdict(action), "error": error})

    async def _push_dead(self, entry: dict[str, Any]) -> None:
        entry["at"] = iso_ms(int(time.time() * 1000))
        async with self.server.pipeline(transaction=True) as pipe:
            pipe.rpush(self.keys.store_dead_letters, json.dumps(entry, ensure_ascii=False))
            pipe.ltrim(self.keys.store_dead_letters, -DEAD_LETTER_CAP, -1)
            await pipe.execute()


class FileSpill:
    """A JSON-lines spill file, for workers without Redis (``scrapy crawl`` + ES only).

    Appends are fsynced under an exclusive lock; one drainer at a time (its own lock),
    which rewrites the file without what it sent.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.dead_path = self.path.with_name(self.path.stem + ".dead.jsonl")
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self._drain_lock_path = self.path.with_name(self.path.name + ".drain-lock")
        self.description = f"file {self.path}"
        self._mutex = asyncio.Lock()

    @contextlib.contextmanager
    def _locked(self, path: Path, *, blocking: bool = True) -> Iterator[bool]:
        with path.open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _append(self, path: Path, lines: Sequence[str]) -> None:
        with self._locked(self._lock_path), path.open("a", encoding="utf-8") as out:
            out.writelines(line + "\n" for line in lines)
            out.flush()
            os.fsync(out.fileno())

    def _read(self) -> list[str]:
        try:
            return self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []

    async def push(self, actions: Sequence[StoreAction]) -> None:
        if actions:
            async with self._mutex:
                self._append(self.path, [a.to_json() for a in actions])

    async def size(self) -> int:
        async with self._mutex:
            with self._locked(self._lock_path):
                return sum(1 for line in self._read() if line.strip())

    async def drain(self, send: SendFn, *, batch: int, max_batches: int | None = None) -> int:
        drained = 0
        with self._locked(self._drain_lock_path, blocking=False) as acquired:
            if not acquired:
                return 0
            batches = 0
            while max_batches is None or batches < max_batches:
                async with self._mutex:
                    with self._locked(self._lock_path):
                        head = [line for line in self._read() if line.strip()][:batch]
                if not head:
                    break
                actions = []
                for line in head:
                    try:
                        actions.append(StoreAction.from_json(line))
                    except (ValueError, TypeError) as exc:
                        await self._dead({"raw": line, "error": str(exc)})
                keep = await send(actions)
                async with self._mutex:
                    with self._locked(self._lock_path):
                        rest = [line for line in self._read() if line.strip()][len(head) :]
                        lines = rest + [a.to_json() for a in keep]
                        tmp = self.path.with_name(self.path.name + ".tmp")
                        with tmp.open("w", encoding="utf-8") as out:
                            out.writelines(line + "\n" for line in lines)
                            out.flush()
                            os.fsync(out.fileno())
                        tmp.replace(self.path)
                drained += len(head) - len(keep)
                batches += 1
                if keep:
                    break
        return drained

    async def dead_letter(self, action: StoreAction, error: str) -> None:
        await self._dead({"action": asdict(action), "error": error})

    async def _dead(self, entry: dict[str, Any]) -> None:
        entry["at"] = iso_ms(int(time.time() * 1000))
        async with self._mutex:
            self._append(self.dead_path, [json.dumps(entry, ensure_ascii=False)])


# -- the store ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoreSettings:
    bulk_size: int = 500
    flush_interval: float = 1.0  # s; the drain step must wait past it
    max_buffer: int = 5000  # items held in memory; beyond, new items go to the spill
    spill_after: float = 5.0  # s of failed retries before an item goes to the spill
    max_item_retries: int = 5
    retry_backoff: float = 0.5  # s, doubled per attempt
    retry_backoff_max: float = 8.0
    spill_check_interval: float = 5.0  # how often the loop looks for others' spill
    probe_interval: float = 1.0  # while Elasticsearch is down
    dead_after_attempts: int = 50  # a spilled action failing this often is dead-lettered
    close_timeout: float = 30.0
    replicas: int = 0
    max_chunk_bytes: int = 20 * 1024 * 1024


@dataclass
class StoreReport:
    """What a store did, for logs and the worker's close."""

    counts: dict[str, int] = field(default_factory=dict)
    spill_remaining: int | None = None
    unsaved: int = 0  # items neither stored nor spilled (both services down at close)


@dataclass(eq=False)
class _Pending:
    action: StoreAction
    future: asyncio.Future[Outcome]
    enqueued: float
    next_try: float


_RETRY = "retry"  # a bulk result that is neither final nor permanent


class ItemStore:
    """Buffered, durable writes of ``StoreAction``s (see the module docstring).

    Use inside a running event loop: ``await store.start()`` ... ``await store.close()``
    (or ``async with``). ``put()`` may be called concurrently by many tasks.
    """

    def __init__(
        self,
        es: AsyncElasticsearch,
        spill: Spill | None,
        *,
        settings: StoreSettings | None = None,
        properties_for: Callable[[str], Mapping[str, Any] | None] | None = None,
        on_count: Callable[[str, int], None] | None = None,
    ) -> None:
        self.es = es
        self.spill = spill
        self.settings = settings or StoreSettings()
        self.properties_for = properties_for or _schema_properties
        self._on_count = on_count
        self.counts: dict[str, int] = {}
        self._buffer: list[_Pending] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._close_deadline = 0.0
        self._ensured: set[tuple[str, str]] = set()
        self._down_since: float | None = None
        self._last_probe = 0.0
        self._last_spill_check = 0.0
        self._spill_dirty = False
        self._spill_warned = 0.0

    async def __aenter__(self) -> ItemStore:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- public ---------------------------------------------------------------------------
    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="item-store")

    async def put(self, action: StoreAction) -> Outcome:
        """Returns once ``action`` is durable; raises ``DeadLettered`` if ES refused it."""
        if self._closing:
            raise RuntimeError("the store is closing")
        now = time.monotonic()
        if self.spill is not None and (
            len(self._buffer) >= self.settings.max_buffer or self._down_for(now) is not None
        ):
            # Elasticsearch has been down past spill_after (or the buffer is full):
            # make the item durable now rather than hold the crawl.
            try:
                await self.spill.push([action])
            except SPILL_ERRORS as exc:
                self._warn_spill(exc)
            else:
                self._count("store/spilled")
                self._spill_dirty = True
                return Outcome.SPILLED
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self._buffer.append(_Pending(action, future, now, now))
        if len(self._buffer) == 1 or len(self._buffer) >= self.settings.bulk_size:
            self._wake.set()
        outcome = await asyncio.shield(future)
        return outcome

    async def flush(self) -> None:
        """Send everything buffered now, ignoring the time window (tests, benchmarks)."""
        pending = [p for p in self._buffer if not p.future.done()]
        for chunk in _chunks(pending, self.settings.bulk_size):
            await self._send(chunk)

    async def drain_spill(self, *, max_batches: int | None = None) -> int:
        """Move spilled actions into Elasticsearch; returns how many left the spill."""
        if self.spill is None:
            return 0
        drained = await self.spill.drain(
            self._send_spilled, batch=self.settings.bulk_size, max_batches=max_batches
        )
        self._last_spill_check = time.monotonic()
        if drained:
            self._count("store/spill_drained", drained)
            logger.info("drained %d spilled items into Elasticsearch", drained)
        return drained

    async def close(self, timeout: float | None = None) -> StoreReport:
        """Flush, retry until ``timeout``, spill what is left, drain the spill once."""
        self._closing = True
        self._close_deadline = time.monotonic() + (
            self.settings.close_timeout if timeout is None else timeout
        )
        self._wake.set()
        if self._task is not None:
            await self._task
        report = StoreReport(counts=dict(self.counts))
        if self.spill is not None:
            if self._down_since is None:
                with contextlib.suppress(*REDIS_ERRORS, OSError, TransportError):
                    await self.drain_spill()
            with contextlib.suppress(*REDIS_ERRORS, OSError):
                report.spill_remaining = await self.spill.size()
        report.counts = dict(self.counts)
        report.unsaved = self.counts.get("store/unsaved", 0)
        return report

    @property
    def healthy(self) -> bool:
        return self._down_since is None

    # -- the loop ---------------------------------------------------------------------------
    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self._sleep_time())
            self._wake.clear()
            try:
                await self._tick()
            except Exception:
                # Never let the loop die: items would wait forever.
                logger.exception("item store loop error")
                await asyncio.sleep(self.settings.probe_interval)
            if self._closing and not self._buffer:
                return

    def _sleep_time(self) -> float:
        now = time.monotonic()
        s = self.settings
        deadlines = [self._last_spill_check + s.spill_check_interval]
        if self._buffer:
            deadlines.append(
                min(
                    p.enqueued + s.flush_interval if p.action.attempts == 0 else p.next_try
                    for p in self._buffer
                )
            )
        if self._down_since is not None:
            deadlines.append(self._last_probe + s.probe_interval)
        if self._closing:
            deadlines.append(self._close_deadline)
        return max(0.0, min(deadlines) - now)

    async def _tick(self) -> None:
        s = self.settings
        now = time.monotonic()
        ready = [p for p in self._buffer if p.next_try <= now and not p.future.done()]
        due = ready and (
            self._closing
            or len(ready) >= s.bulk_size
            or any(p.action.attempts or now - p.enqueued >= s.flush_interval for p in ready)
        )
        if due:
            for chunk in _chunks(ready, s.bulk_size):
                await self._send(chunk)
        await self._spill_overdue(time.monotonic())
        now = time.monotonic()
        if (
            self._down_since is not None
            and not self._buffer
            and now - self._last_probe >= s.probe_interval
        ):
            self._last_probe = now
            if await self._ping():
                self._mark_up()
        if (
            self.spill is not None
            and self._down_since is None
            and not self._closing
            and (self._spill_dirty or now - self._last_spill_check >= s.spill_check_interval)
        ):
            self._spill_dirty = False
            try:
                # A few batches per tick, so live items are not held up by a big spill.
                await self.drain_spill(max_batches=4)
            except SPILL_ERRORS as exc:
                self._warn_spill(exc)
            remaining = await self._spill_size()
            self._spill_dirty = bool(remaining)

    async def _spill_size(self) -> int:
        if self.spill is None:
            return 0
        try:
            return await self.spill.size()
        except SPILL_ERRORS:
            return 0

    async def _ping(self) -> bool:
        try:
            return bool(await self.es.ping())
        except Exception:
            return False

    # -- sending ------------------------------------------------------------------------------
    async def _send(self, chunk: Sequence[_Pending]) -> None:
        groups = _group_by_doc(chunk, lambda p: p.action)
        reps = [max(group, key=lambda p: p.action.version) for group in groups.values()]
        results = await self._bulk([p.action for p in reps])
        now = time.monotonic()
        for rep, (outcome, error) in zip(reps, results, strict=True):
            group = groups[rep.action.doc_id]
            if outcome in (Outcome.INDEXED, Outcome.SUPERSEDED):
                self._count(f"store/{outcome}")
                if len(group) > 1:
                    self._count("store/superseded", len(group) - 1)
                for p in group:
                    _resolve(p, outcome if p is rep else Outcome.SUPERSEDED)
            elif outcome == Outcome.DEAD_LETTER:
                await self._dead_letter(rep.action, error or "")
                for p in group:
                    if not p.future.done():
                        p.future.set_exception(DeadLettered(error))
            else:
                self._count("store/retried", len(group))
                for p in group:
                    p.action.attempts += 1
                    p.action.error = error
                    p.next_try = now + _backoff(self.settings, p.action.attempts)
        self._buffer = [p for p in self._buffer if not p.future.done()]

    async def _send_spilled(self, actions: list[StoreAction]) -> list[StoreAction]:
        groups = _group_by_doc(actions, lambda a: a)
        reps = [max(group, key=lambda a: a.version) for group in groups.values()]
        results = await self._bulk(reps)
        keep: list[StoreAction] = []
        for rep, (outcome, error) in zip(reps, results, strict=True):
            if outcome in (Outcome.INDEXED, Outcome.SUPERSEDED):
                self._count(f"store/{outcome}")
                self._count("store/superseded", len(groups[rep.doc_id]) - 1)
            elif outcome == Outcome.DEAD_LETTER:
                await self._dead_letter(rep, error or "")
            else:
                rep.attempts += 1
                rep.error = error
                if rep.attempts >= self.settings.dead_after_attempts:
                    await self._dead_letter(rep, f"gave up after {rep.attempts} attempts: {error}")
                else:
                    keep.append(rep)
        return keep

    async def _bulk(self, actions: list[StoreAction]) -> list[tuple[Outcome | str, str | None]]:
        """One bulk request (per chunk) for ``actions``; an outcome per action, in order."""
        results: dict[str, tuple[Outcome | str, str | None]] = {}
        # Declare each (site, item type) once per call, not once per action: with the
        # node down, 500 actions must not mean 500 failed connection attempts.
        problems = {
            pair: await self._prepare(*pair)
            for pair in dict.fromkeys((a.site, a.item_type) for a in actions)
        }
        sendable: list[StoreAction] = []
        for action in actions:
            problem = problems[(action.site, action.item_type)]
            if problem is None:
                sendable.append(action)
            else:
                results[action.doc_id] = (_RETRY, problem)
        needs_state = [a for a in sendable if a.needs_state]
        if needs_state:
            try:
                await self._resolve_state(needs_state)
            except (TransportError, ApiError) as exc:
                if isinstance(exc, TransportError):
                    self._mark_down(exc)
                error = f"{type(exc).__name__}: {exc}"
                return [(_RETRY, error) for _ in actions]
        if sendable:
            try:
                async for ok, info in async_streaming_bulk(
                    self.es,
                    [a.bulk_op() for a in sendable],
                    chunk_size=self.settings.bulk_size,
                    max_chunk_bytes=self.settings.max_chunk_bytes,
                    raise_on_error=False,
                    raise_on_exception=False,
                    # The helper itself retries 429 (queue full) with backoff.
                    max_retries=2,
                    initial_backoff=0.2,
                    max_backoff=2.0,
                    require_alias=True,
                ):
                    ((_, data),) = info.items()
                    results[str(data.get("_id"))] = self._classify(ok, data)
                self._count("store/bulk_requests")
            except (TransportError, TimeoutError, OSError) as exc:
                self._mark_down(exc)
                error = f"{type(exc).__name__}: {exc}"
                return [(_RETRY, error) for _ in actions]
            self._mark_up()
        return [results.get(a.doc_id, (_RETRY, "no result for this document")) for a in actions]

    def _classify(self, ok: bool, data: Mapping[str, Any]) -> tuple[Outcome | str, str | None]:
        if ok:
            return Outcome.INDEXED, None
        status = data.get("status")
        error = data.get("error")
        kind = error.get("type") if isinstance(error, dict) else None
        reason = error.get("reason") if isinstance(error, dict) else str(error)
        text = f"{status} {kind or 'error'}: {reason}"
        if status == 409 and kind == "version_conflict_engine_exception":
            return Outcome.SUPERSEDED, None
        self._count(f"store/errors/{kind or status}")
        if kind in PERMANENT_ERRORS:
            return Outcome.DEAD_LETTER, text
        if kind == "index_not_found_exception":
            self._ensured.clear()  # an alias went away: declare the layout again
        return _RETRY, text

    async def _prepare(self, site: str, item_type: str) -> str | None:
        """Make sure the index of ``site``/``item_type`` exists; an error text if not yet."""
        if (site, item_type) in self._ensured:
            return None
        try:
            await ensure_item_index(
                self.es,
                site,
                item_type,
                self.properties_for(item_type),
                replicas=self.settings.replicas,
            )
        except (TransportError, TimeoutError, OSError) as exc:
            self._mark_down(exc)
            return f"cannot declare the index: {type(exc).__name__}: {exc}"
        except (ApiError, UnknownItemType) as exc:
            logger.error("cannot declare the index of %s/%s: %s", site, item_type, exc)
            return f"cannot declare the index: {exc}"
        self._ensured.add((site, item_type))
        return None

    async def _resolve_state(self, actions: list[StoreAction]) -> None:
        """first_seen/last_changed from the stored documents (no dedup state: no Redis)."""
        by_index: dict[str, list[StoreAction]] = {}
        for action in actions:
            by_index.setdefault(action.index, []).append(action)
        for index, group in by_index.items():
            try:
                response = await self.es.mget(
                    index=index,
                    ids=[a.doc_id for a in group],
                    source_includes=["content_hash", "first_seen", "last_changed"],
                )
                docs = {d["_id"]: d.get("_source") for d in response["docs"] if d.get("found")}
            except NotFoundError:
                docs = {}
            for action in group:
                seen = action.document["last_seen"]
                stored = docs.get(action.doc_id)
                if stored is None:
                    verdict, first, changed = "new", seen, seen
                elif stored.get("content_hash") == action.document["content_hash"]:
                    verdict = "unchanged"
                    first = stored.get("first_seen", seen)
                    changed = stored.get("last_changed", seen)
                else:
                    verdict, first, changed = "changed", stored.get("first_seen", seen), seen
                action.document["first_seen"] = first
                action.document["last_changed"] = changed
                action.needs_state = False
                self._count(f"items/{verdict}")

    # -- failure handling ---------------------------------------------------------------------
    async def _spill_overdue(self, now: float) -> None:
        s = self.settings
        pending = [p for p in self._buffer if not p.future.done()]
        if self._closing and now >= self._close_deadline:
            overdue = pending
        else:
            overdue = [
                p
                for p in pending
                if p.action.attempts
                and (now - p.enqueued >= s.spill_after or p.action.attempts > s.max_item_retries)
            ]
            if len(pending) > s.max_buffer:
                extra = [p for p in pending[: len(pending) - s.max_buffer] if p not in overdue]
                overdue += extra
        if not overdue:
            return
        if self.spill is not None:
            try:
                await self.spill.push([p.action for p in overdue])
            except SPILL_ERRORS as exc:
                self._warn_spill(exc)
            else:
                self._count("store/spilled", len(overdue))
                self._spill_dirty = True
                logger.warning(
                    "%d items not accepted by Elasticsearch moved to the spill (%s); last "
                    "error: %s",
                    len(overdue),
                    self.spill.description,
                    overdue[-1].action.error,
                )
                for p in overdue:
                    _resolve(p, Outcome.SPILLED)
        if self._closing and now >= self._close_deadline:
            # Nowhere durable to put them: fail loudly rather than pretend.
            unsaved = [p for p in overdue if not p.future.done()]
            if unsaved:
                self._count("store/unsaved", len(unsaved))
                logger.error(
                    "closing with %d items neither in Elasticsearch nor in the spill", len(unsaved)
                )
                for p in unsaved:
                    p.future.set_exception(StoreUnavailable("Elasticsearch and the spill are down"))
        self._buffer = [p for p in self._buffer if not p.future.done()]

    async def _dead_letter(self, action: StoreAction, error: str) -> None:
        self._count("store/dead_letter")
        logger.error("Elasticsearch rejected %s for good: %s", action.key, error)
        if self.spill is not None:
            try:
                await self.spill.dead_letter(action, error)
            except SPILL_ERRORS as exc:
                logger.error("could not record the dead letter of %s: %s", action.key, exc)

    def _down_for(self, now: float) -> float | None:
        """Seconds Elasticsearch has been down, if longer than ``spill_after``."""
        if self._down_since is None:
            return None
        down = now - self._down_since
        return down if down >= self.settings.spill_after else None

    def _mark_down(self, exc: BaseException) -> None:
        if self._down_since is None:
            self._down_since = time.monotonic()
            self._last_probe = self._down_since
            self._count("store/outages")
            logger.warning("Elasticsearch unreachable (%s: %s); keeping items", type(exc), exc)

    def _mark_up(self) -> None:
        if self._down_since is not None:
            logger.info(
                "Elasticsearch reachable again after %.1fs", time.monotonic() - self._down_since
            )
            self._down_since = None
            self._spill_dirty = True

    def _warn_spill(self, exc: BaseException) -> None:
        now = time.monotonic()
        if now - self._spill_warned > 10:
            self._spill_warned = now
            logger.error("spill unavailable (%s: %s); keeping items in memory", type(exc), exc)

    def _count(self, name: str, n: int = 1) -> None:
        if n <= 0:
            return
        self.counts[name] = self.counts.get(name, 0) + n
        if self._on_count is not None:
            self._on_count(name, n)


def _backoff(settings: StoreSettings, attempts: int) -> float:
    return float(min(settings.retry_backoff_max, settings.retry_backoff * 2 ** (attempts - 1)))


def _resolve(pending: _Pending, outcome: Outcome) -> None:
    if not pending.future.done():
        pending.future.set_result(outcome)


def _group_by_doc(
    entries: Sequence[_E], action_of: Callable[[_E], StoreAction]
) -> dict[str, list[_E]]:
    """Writes of one document in one batch collapse into one (the newest version)."""
    groups: dict[str, list[_E]] = {}
    for entry in entries:
        groups.setdefault(action_of(entry).doc_id, []).append(entry)
    return groups


def _chunks(entries: Sequence[_E], size: int) -> Iterator[list[_E]]:
    for start in range(0, len(entries), size):
        yield list(entries[start : start + size])


def _schema_properties(item_type: str) -> Mapping[str, Any] | None:
    try:
        return schema_by_type(item_type).es_properties
    except UnknownItemType:
        return None


# -- operator/flow helpers (sync) ---------------------------------------------------------------


def index_for_key(key: str) -> str:
    """The alias holding an item key's document (``<site>:<type>:<id>`` -> its type's)."""
    site, item_type, _ = key.split(":", 2)
    return IndexLayout.write_alias(site, item_type)


def get_items(es: Elasticsearch, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Stored documents by item key, any mix of sites and types, in one ``mget``.

    (``mget`` on the read alias ``items-<site>`` fails once a site has several item
    types; each key names its type, so each document is fetched from its own alias.)
    Keys without a document (dead-lettered, never stored) are left out.
    """
    wanted = list(dict.fromkeys(keys))
    if not wanted:
        return {}
    response = es.mget(
        docs=[{"_index": index_for_key(key), "_id": doc_id_for(key)} for key in wanted]
    )
    return {
        key: doc["_source"]
        for key, doc in zip(wanted, response["docs"], strict=True)
        if doc.get("found")
    }


def spill_size(server: redis.Redis, site: str) -> int:
    """Items of ``site`` waiting in the Redis spill (the drain step waits for 0)."""
    return int(server.llen(SiteKeys(site).store_spill))


def dead_letters(server: redis.Redis, site: str, limit: int = 100) -> list[dict[str, Any]]:
    """The newest ``limit`` dead letters of ``site`` (action + error + time)."""
    raws = server.lrange(SiteKeys(site).store_dead_letters, -limit, -1)
    return [json.loads(raw) for raw in raws]


async def drain_site_spill(
    es: AsyncElasticsearch,
    server: redis.asyncio.Redis,
    site: str,
    *,
    settings: StoreSettings | None = None,
) -> tuple[int, int]:
    """Drain ``site``'s Redis spill into Elasticsearch; returns (drained, remaining)."""
    spill = RedisSpill(server, site)
    store = ItemStore(es, spill, settings=settings)
    drained = await store.drain_spill()
    return drained, await spill.size()


def drain_spill_sync(site: str, *, redis_url: str, es_kwargs: Mapping[str, Any]) -> tuple[int, int]:
    """``drain_site_spill`` for sync callers (flows, CLI); returns (drained, remaining)."""

    async def run() -> tuple[int, int]:
        es = AsyncElasticsearch(**es_kwargs)
        server = redis.asyncio.Redis.from_url(redis_url)
        try:
            return await drain_site_spill(es, server, site)
        finally:
            await es.close()
            await server.aclose()

    return asyncio.run(run())
