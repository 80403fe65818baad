"""Live progress of a run's long steps: what the Prefect UI and the run's log show.

A step (wait-for-drain, llm-process, producer) hands its figures to a ``StepProgress``,
which keeps one Prefect progress artifact (0-100) and one table artifact of the figures
(at most every ``table_interval`` seconds), both updated in place, and logs one INFO
line at most every ``log_interval`` seconds (``PROGRESS_LOG_INTERVAL``). The figures
themselves are pure functions of the step's state (``drain_progress``,
``llm_progress``), tested without Prefect.

The drain's percentage is pages done over pages known (done + queued + leased): it can
step back when a page yields many new links, which is what an operator needs to see; the
time left is the pages still known at the recent pages/s.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from uuid import UUID

from prefect.artifacts import (
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import ArtifactUpdate

from core.frontier.drain import DrainState
from core.jobs.index import block_count
from indexing.process import ProcessReport
from orchestration.report import duration_text

Logger = logging.Logger | logging.LoggerAdapter[logging.Logger]

# Pages/s is measured over the last polls within this many seconds (the ETA's rate).
RATE_WINDOW_SECONDS = 60.0


@dataclass(frozen=True)
class DrainProgress:
    """The crawl of one job as one poll of the frontier saw it."""

    pages_done: int  # pages fetched (``pages_fetched``: any status, robots.txt apart)
    queued: int
    leased: int
    items: Mapping[str, int]  # new / changed / unchanged / invalid
    blocked: int
    workers: int
    busy_workers: int
    pages_per_second: float | None
    seconds_left: float | None

    @property
    def percent(self) -> float:
        known = self.pages_done + self.queued + self.leased
        if known == 0:
            return 0.0
        return min(100.0, 100.0 * self.pages_done / known)

    @property
    def block_rate(self) -> float | None:
        return self.blocked / self.pages_done if self.pages_done else None

    def rows(self) -> list[dict[str, Any]]:
        rate = self.block_rate
        rows: Sequence[tuple[str, Any]] = (
            ("progress", f"{self.percent:.1f}%"),
            ("pages fetched", self.pages_done),
            ("pages queued", self.queued),
            ("pages in flight (leased)", self.leased),
            *((f"items {verdict}", count) for verdict, count in self.items.items()),
            ("blocked", self.blocked),
            ("block rate", "n/a" if rate is None else f"{rate:.2%}"),
            ("live workers", f"{self.workers} ({self.busy_workers} busy)"),
            ("pages/s", "n/a" if self.pages_per_second is None else f"{self.pages_per_second:.1f}"),
            ("time left (estimate)", _left(self.seconds_left)),
        )
        return [{"metric": name, "value": value} for name, value in rows]

    def line(self) -> str:
        items = ", ".join(f"{verdict} {count}" for verdict, count in self.items.items())
        rate = "n/a" if self.pages_per_second is None else f"{self.pages_per_second:.1f}"
        block_rate = self.block_rate
        return (
            f"crawl {self.percent:.0f}%: {self.pages_done} pages fetched, {self.queued} queued, "
            f"{self.leased} in flight; items {items}; blocked {self.blocked} "
            f"({'n/a' if block_rate is None else f'{block_rate:.1%}'}); "
            f"{self.workers} workers; {rate} pages/s; {_left(self.seconds_left)} left"
        )


ITEM_VERDICTS = ("new", "changed", "unchanged", "invalid")


class RateMeter:
    """Pages/s over the recent polls (a sliding window of (time, pages) samples)."""

    def __init__(self, window: float = RATE_WINDOW_SECONDS) -> None:
        self.window = window
        self.samples: list[tuple[float, int]] = []

    def add(self, at: float, pages: int) -> float | None:
        self.samples.append((at, pages))
        while len(self.samples) > 2 and at - self.samples[1][0] >= self.window:
            self.samples.pop(0)
        first_at, first_pages = self.samples[0]
        if at - first_at <= 0:
            return None
        return max(0.0, (pages - first_pages) / (at - first_at))


def pages_fetched(counters: Mapping[str, int]) -> int:
    """The workers' count of the job's pages: responses classified, robots.txt fetches
    apart, as the job's ledger counts the report's ``pages fetched``; Scrapy's response
    count when the fetch layer classified none."""
    classified = int(counters.get("responses/classified", 0))
    if not classified:
        return int(counters.get("downloader/response_count", 0))
    return classified - int(counters.get("responses/robots_txt", 0))


def drain_progress(state: DrainState, pages_per_second: float | None) -> DrainProgress:
    """The figures of one drain poll (``state``), with the recent rate measured apart."""
    counters = state.counters
    pages = pages_fetched(counters)
    pending = state.queued + state.leased
    left = None
    if pending == 0:
        left = 0.0
    elif pages_per_second:
        left = pending / pages_per_second
    return DrainProgress(
        pages_done=pages,
        queued=state.queued,
        leased=state.leased,
        items={verdict: int(counters.get(f"items/{verdict}", 0)) for verdict in ITEM_VERDICTS},
        blocked=block_count(counters),
        workers=len(state.workers),
        busy_workers=len(state.busy_workers),
        pages_per_second=pages_per_second,
        seconds_left=left,
    )


@dataclass(frozen=True)
class LlmProgress:
    """The llm-process step after a batch of items."""

    items_done: int
    items_total: int
    chunks_embedded: int
    chunks_indexed: int
    items_skipped: int  # already up to date
    seconds: float

    @property
    def percent(self) -> float:
        return 100.0 if self.items_total == 0 else 100.0 * self.items_done / self.items_total

    @property
    def seconds_left(self) -> float | None:
        if self.items_done == 0 or self.seconds <= 0:
            return None
        return (self.items_total - self.items_done) * self.seconds / self.items_done

    def rows(self) -> list[dict[str, Any]]:
        rows = (
            ("progress", f"{self.percent:.1f}%"),
            ("items chunked", f"{self.items_done} of {self.items_total}"),
            ("items already up to date", self.items_skipped),
            ("chunks embedded", self.chunks_embedded),
            ("chunks indexed", self.chunks_indexed),
            ("time left (estimate)", _left(self.seconds_left)),
        )
        return [{"metric": name, "value": value} for name, value in rows]

    def line(self) -> str:
        return (
            f"llm-process {self.percent:.0f}%: {self.items_done}/{self.items_total} items, "
            f"{self.chunks_embedded} chunks embedded, {self.chunks_indexed} indexed, "
            f"{self.items_skipped} up to date; {_left(self.seconds_left)} left"
        )


def _left(seconds: float | None) -> str:
    return "unknown" if seconds is None else duration_text(seconds)


class StepProgress:
    """One step's progress artifact, table artifact and throttled INFO line.

    Prefect being unreachable for an artifact never fails the step: the figures are
    logged all the same (the artifacts are a view, the step's result is the record).
    """

    def __init__(
        self,
        key: str,
        description: str,
        logger: Logger,
        *,
        log_interval: float = 30.0,
        table_interval: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.key = key
        self.description = description
        self.logger = logger
        self.log_interval = log_interval
        self.table_interval = table_interval
        self.clock = clock
        self.artifact_id: UUID | None = None
        self.table_id: UUID | None = None
        self._last_log: float | None = None
        self._last_table: float | None = None
        self._last_percent: float | None = None
        self._warned = False

    def update(self, percent: float, rows: list[dict[str, Any]], line: str) -> None:
        now = self.clock()
        percent = round(max(0.0, min(100.0, percent)), 1)
        if percent != self._last_percent:
            self._progress(percent)
        if self._last_table is None or now - self._last_table >= self.table_interval:
            self._last_table = now
            self._table(rows)
        if self._last_log is None or now - self._last_log >= self.log_interval:
            self._last_log = now
            self.logger.info(line)

    def finish(self, rows: list[dict[str, Any]], line: str) -> None:
        """100%, the final table and the final line, whatever the intervals."""
        self._progress(100.0)
        self._table(rows)
        self.logger.info(line)

    def _progress(self, percent: float) -> None:
        try:
            if self.artifact_id is None:
                self.artifact_id = _synced(
                    create_progress_artifact(
                        percent, key=f"{self.key}-progress", description=self.description
                    )
                )
            else:
                update_progress_artifact(self.artifact_id, percent)
            self._last_percent = percent
        except Exception as exc:  # a view only: never fail the step for it
            self._unavailable("progress artifact", exc)

    def _table(self, rows: list[dict[str, Any]]) -> None:
        # Created once, then its data replaced in place (one card in the run's Artifacts
        # tab, not one per poll): Prefect's public helpers only create table artifacts.
        try:
            if self.table_id is None:
                self.table_id = _synced(
                    create_table_artifact(
                        rows, key=f"{self.key}-live", description=self.description
                    )
                )
            else:
                with get_client(sync_client=True) as client:
                    client.update_artifact(self.table_id, ArtifactUpdate(data=json.dumps(rows)))
        except Exception as exc:
            self._unavailable("progress table", exc)

    def _unavailable(self, what: str, exc: Exception) -> None:
        log = self.logger.debug if self._warned else self.logger.warning
        self._warned = True
        log("%s %s not updated (%s: %s); the step goes on", self.key, what, type(exc).__name__, exc)


class DrainWatcher:
    """wait-for-drain's ``on_poll``: each poll's figures to the step's progress."""

    def __init__(self, key: str, logger: Logger, *, log_interval: float = 30.0) -> None:
        self.progress = StepProgress(
            key, "wait-for-drain: pages fetched of pages known", logger, log_interval=log_interval
        )
        self.rate = RateMeter()
        self.clock = time.monotonic

    def poll(self, state: DrainState) -> DrainProgress:
        figures = self.figures(state)
        self.progress.update(figures.percent, figures.rows(), figures.line())
        return figures

    def finish(self, state: DrainState) -> DrainProgress:
        figures = self.figures(state)
        self.progress.finish(figures.rows(), figures.line())
        return figures

    def figures(self, state: DrainState) -> DrainProgress:
        return drain_progress(state, self.rate.add(self.clock(), pages_fetched(state.counters)))


def llm_progress(report: ProcessReport, done: int) -> LlmProgress:
    return LlmProgress(
        items_done=done,
        items_total=report.items,
        chunks_embedded=report.chunks_embedded,
        chunks_indexed=report.chunks_written,
        items_skipped=report.skipped_unchanged,
        seconds=report.seconds,
    )


class LlmWatcher:
    """llm-process's ``on_batch``: items chunked and chunks embedded/indexed so far."""

    def __init__(self, key: str, logger: Logger, *, log_interval: float = 30.0) -> None:
        self.progress = StepProgress(
            key,
            "llm-process: items chunked, embedded and indexed",
            logger,
            log_interval=log_interval,
        )

    def batch(self, report: ProcessReport, done: int) -> None:
        figures = llm_progress(report, done)
        self.progress.update(figures.percent, figures.rows(), figures.line())

    def finish(self, report: ProcessReport) -> None:
        figures = llm_progress(report, report.items)
        self.progress.finish(figures.rows(), figures.line())


_T = TypeVar("_T")


def _synced(result: _T | Coroutine[Any, Any, _T]) -> _T:
    """The result of Prefect's sync/async function called from sync code: the value itself."""
    assert not isinstance(result, Coroutine), "called inside an event loop"
    return result
