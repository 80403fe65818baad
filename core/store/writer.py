"""``ItemStore``: buffered, durable bulk writes of ``StoreAction``s.

``put()`` returns only when the item is durable: accepted by Elasticsearch, written to the
spill (``core.store.spill``) or dead-lettered (rejected for good). Writes are sent in bulk
by size or age; this is the store hop's one retry layer (backoff, then the spill, drained
back by any worker under a lock). Neither written nor spilled within ``close_timeout``:
given up (``StoreUnavailable``) with one ERROR line. A 401 is an outage (reported once
through ``on_auth``), a 403 a dead letter. A touch returns ``TOUCHED``, ``SUPERSEDED`` or
``MISSING``.

Reads: its constructor's limits (from the ``STORE_*`` settings). Details:
docs/pipelines.md "Bulk, flush window, durability" and "Durability".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence

from elastic_transport import TransportError
from elasticsearch import ApiError, AsyncElasticsearch

from core.keys import REDIS_ERRORS
from core.store.actions import DeadLettered, Outcome, StoreAction
from core.store.batch import (
    ACCEPTED,
    Pending,
    RecordStored,
    StoreReport,
    chunks,
    doc_key,
    group_by_doc,
    job_keys,
    resolve,
)
from core.store.bulk import (
    BulkSender,
    IndexPreparer,
    PropertiesFor,
    schema_properties,
)
from core.store.failures import Failures
from core.store.outage import Outage
from core.store.settings import StoreSettings
from core.store.spill import SPILL_ERRORS, Spill

logger = logging.getLogger(__name__)


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
        settings: StoreSettings,
        properties_for: PropertiesFor | None = None,
        on_count: Callable[[str, int], None] | None = None,
        on_stored: RecordStored | None = None,
        preparers: Mapping[str, IndexPreparer] | None = None,
        on_auth: Callable[[ApiError], None] | None = None,
        on_failed: Callable[[str], None] | None = None,
    ) -> None:
        """``on_failed``: called once with the ERROR line when items are given up."""
        self.es = es
        self.spill = spill
        self.settings = settings
        self._on_count = on_count
        self._on_stored = on_stored
        self.counts: dict[str, int] = {}
        self.outage = Outage(
            settings,
            count=self._count,
            spill=lambda: self.spill.description if self.spill is not None else None,
        )
        self.failures = Failures(
            settings, spill=lambda: self.spill, count=self._count, on_failed=on_failed
        )
        self.bulk = BulkSender(
            es,
            settings,
            properties_for=properties_for or schema_properties,
            count=self._count,
            on_down=self.outage.mark_down,
            on_up=self._mark_up,
            preparers=preparers,
            on_auth=on_auth,
        )
        self._buffer: list[Pending] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._close_deadline = 0.0
        self._last_spill_check = 0.0
        self._spill_dirty = False

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
        """Returns once ``action`` is durable (or a touch found no document: ``MISSING``);
        raises ``DeadLettered`` if ES refused it."""
        if self._closing:
            raise RuntimeError("the store is closing")
        now = time.monotonic()
        if self.spill is not None and (
            len(self._buffer) >= self.settings.max_buffer or self.outage.down_for(now) is not None
        ):
            # Elasticsearch has been down past spill_after (or the buffer is full):
            # make the item durable now rather than hold the crawl.
            try:
                await self.spill.push([action])
            except SPILL_ERRORS as exc:
                self.failures.spill_failed(exc)
                unspillable: float | None = now
            else:
                self.failures.spill_ok()
                self._count("store/spilled")
                self._spill_dirty = True
                return Outcome.SPILLED
        else:
            unspillable = None
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self._buffer.append(Pending(action, future, now, now, unspillable))
        if len(self._buffer) == 1 or len(self._buffer) >= self.settings.bulk_size:
            self._wake.set()
        return await asyncio.shield(future)

    async def flush(self) -> None:
        """Send everything buffered now, ignoring the time window (tests, benchmarks)."""
        pending = [p for p in self._buffer if not p.future.done()]
        for chunk in chunks(pending, self.settings.bulk_size):
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
        report = StoreReport()
        if self.spill is not None:
            if self.outage.since is None:
                with contextlib.suppress(*REDIS_ERRORS, OSError, TransportError):
                    await self.drain_spill()
            with contextlib.suppress(*REDIS_ERRORS, OSError):
                report.spill_remaining = await self.spill.size()
        report.counts = dict(self.counts)
        report.unsaved = self.counts.get("store/unsaved", 0)
        return report

    @property
    def healthy(self) -> bool:
        return self.outage.since is None

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
        if self.outage.since is not None:
            deadlines.append(self.outage.last_probe + s.probe_interval)
        waiting = [p.unspillable for p in self._buffer if p.unspillable is not None]
        if waiting:  # the first item to give up
            deadlines.append(min(waiting) + self.failures.patience)
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
            for chunk in chunks(ready, s.bulk_size):
                await self._send(chunk)
        await self._spill_overdue(time.monotonic())
        now = time.monotonic()
        if (
            self.outage.since is not None
            and not self._buffer
            and now - self.outage.last_probe >= s.probe_interval
        ):
            self.outage.last_probe = now
            if await self._ping():
                self._mark_up()
        if (
            self.spill is not None
            and self.outage.since is None
            and not self._closing
            and (self._spill_dirty or now - self._last_spill_check >= s.spill_check_interval)
        ):
            self._spill_dirty = False
            try:
                # A few batches per tick, so live items are not held up by a big spill.
                await self.drain_spill(max_batches=4)
            except SPILL_ERRORS as exc:
                self.failures.spill_failed(exc)
            else:
                self.failures.spill_ok()
            self._spill_dirty = bool(await self._spill_size())

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
    async def _send(self, chunk: Sequence[Pending]) -> None:
        groups = group_by_doc(chunk, lambda p: p.action)
        reps = [max(group, key=lambda p: p.action.version) for group in groups.values()]
        results = await self.bulk.send([p.action for p in reps])
        now = time.monotonic()
        accepted: list[tuple[Pending, Outcome]] = []
        for rep, (outcome, error) in zip(reps, results, strict=True):
            group = groups[doc_key(rep.action)]
            if outcome in ACCEPTED:
                self._count(f"store/{outcome}")
                self._count("store/superseded", len(group) - 1)
                accepted.append((rep, Outcome(outcome)))
            elif outcome == Outcome.MISSING:
                self._count("store/touch_missing", len(group))
                for p in group:
                    resolve(p, Outcome.MISSING)
            elif outcome == Outcome.DEAD_LETTER:
                first = await self.failures.dead_letter(rep.action, error or "")
                for p in group:
                    if not p.future.done():
                        p.future.set_exception(DeadLettered(error, repeated=not first))
            else:
                self._retry_later(group, error, now)
        # An item counts as stored once the job's ledger says so: until then its put()
        # does not return, so its request is not acked (re-sending it is idempotent).
        stored = [p for rep, _ in accepted for p in groups[doc_key(rep.action)]]
        recorded = await self._record_stored([p.action for p in stored])
        for rep, outcome in accepted:
            group = groups[doc_key(rep.action)]
            if recorded:
                for p in group:
                    resolve(p, outcome if p is rep else Outcome.SUPERSEDED)
            else:
                self._retry_later(group, "stored, not yet recorded in the job's ledger", now)
        self._buffer = [p for p in self._buffer if not p.future.done()]

    def _retry_later(self, group: Sequence[Pending], error: str | None, now: float) -> None:
        self._count("store/retried", len(group))
        for p in group:
            p.action.attempts += 1
            p.action.error = error
            p.next_try = now + self.settings.backoff(p.action.attempts)

    async def _record_stored(self, actions: Sequence[StoreAction]) -> bool:
        if self._on_stored is None or not actions:
            return True
        try:
            await self._on_stored(job_keys(actions))
        except REDIS_ERRORS as exc:
            self._count("store/ledger_errors")
            logger.warning("job ledger unreachable (%s); stored items retried", type(exc).__name__)
            return False
        return True

    async def _send_spilled(self, actions: list[StoreAction]) -> list[StoreAction]:
        groups = group_by_doc(actions, lambda a: a)
        reps = [max(group, key=lambda a: a.version) for group in groups.values()]
        results = await self.bulk.send(reps)
        keep: list[StoreAction] = []
        stored: list[StoreAction] = []
        for rep, (outcome, error) in zip(reps, results, strict=True):
            if outcome in ACCEPTED:
                self._count(f"store/{outcome}")
                self._count("store/superseded", len(groups[doc_key(rep)]) - 1)
                stored += groups[doc_key(rep)]
            elif outcome == Outcome.MISSING:
                self._count("store/touch_missing", len(groups[doc_key(rep)]))
                logger.warning(
                    "spilled touch of %s dropped: its document is gone (the item's next "
                    "crawl fetches it in full)",
                    rep.key,
                )
            elif outcome == Outcome.DEAD_LETTER:
                await self.failures.dead_letter(rep, error or "")
            else:
                rep.attempts += 1
                rep.error = error
                if rep.attempts >= self.settings.dead_after_attempts:
                    await self.failures.dead_letter(
                        rep, f"gave up after {rep.attempts} attempts: {error}"
                    )
                else:
                    keep.append(rep)
        if self._on_stored is not None and stored:
            # Raises while Redis is away: the drain stops before trimming, the entries stay.
            await self._on_stored(job_keys(stored))
        return keep

    # -- failure handling ---------------------------------------------------------------------
    async def _spill_overdue(self, now: float) -> None:
        s = self.settings
        pending = [p for p in self._buffer if not p.future.done()]
        final = self._closing and now >= self._close_deadline
        if final:
            overdue = pending
        else:
            overdue = [
                p
                for p in pending
                if p.action.attempts
                and (now - p.enqueued >= s.spill_after or p.action.attempts > s.max_item_retries)
            ]
            if len(pending) > s.max_buffer:
                overdue += [p for p in pending[: len(pending) - s.max_buffer] if p not in overdue]
        if overdue and not await self._to_spill(overdue):
            for p in overdue:  # neither written nor spilled: the clock of patience runs
                p.unspillable = now if p.unspillable is None else p.unspillable
        patience = self.failures.patience
        stuck = [
            p
            for p in pending
            if not p.future.done()
            and (final or (p.unspillable is not None and now - p.unspillable >= patience))
        ]
        if stuck:
            # Nowhere durable to put them: fail loudly rather than pretend (or wait forever).
            self.failures.give_up(stuck)
        self._buffer = [p for p in self._buffer if not p.future.done()]

    async def _to_spill(self, overdue: Sequence[Pending]) -> bool:
        """Move ``overdue`` items to the spill; False when there is none or it failed."""
        if self.spill is None:
            return False
        try:
            await self.spill.push([p.action for p in overdue])
        except SPILL_ERRORS as exc:
            self.failures.spill_failed(exc)
            return False
        self.failures.spill_ok()
        self._count("store/spilled", len(overdue))
        self._spill_dirty = True
        logger.warning(
            "%d items not accepted by Elasticsearch moved to the spill (%s); last error: %s",
            len(overdue),
            self.spill.description,
            overdue[-1].action.error,
        )
        for p in overdue:
            resolve(p, Outcome.SPILLED)
        return True

    def _mark_up(self) -> None:
        if self.outage.mark_up():
            self._spill_dirty = True

    def _count(self, name: str, n: int = 1) -> None:
        if n <= 0:
            return
        self.counts[name] = self.counts.get(name, 0) + n
        if self._on_count is not None:
            self._on_count(name, n)
