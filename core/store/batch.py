"""What the writer (``core.store.writer``) holds between ``put()`` and the outcome: the
pending writes, their grouping per document and the writer's report."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from core.store.actions import Outcome, StoreAction

_E = TypeVar("_E")

# Records ``(job id, item key)`` pairs Elasticsearch accepted (``core.figures.ledger.JobLedger.
# stored``); raising a Redis error means "not recorded".
RecordStored = Callable[[Iterable[tuple[str, str]]], Awaitable[None]]


@dataclass
class StoreReport:
    """What a store did, for logs and the worker's close."""

    counts: dict[str, int] = field(default_factory=dict)
    spill_remaining: int | None = None
    unsaved: int = 0  # items neither stored nor spilled (both services down at close)


@dataclass(eq=False)
class Pending:
    action: StoreAction
    future: asyncio.Future[Outcome]
    enqueued: float
    next_try: float
    # Since when it could be neither written nor spilled (None: not so): given up after
    # STORE_CLOSE_TIMEOUT (core.store.failures).
    unspillable: float | None = None


# What ``put()`` counts as stored (recorded in the job's ledger for item writes).
ACCEPTED = (Outcome.INDEXED, Outcome.TOUCHED, Outcome.SUPERSEDED)


def job_keys(actions: Iterable[StoreAction]) -> list[tuple[str, str]]:
    """The ledger's records of item writes (another index's documents are not items)."""
    return [
        (str(a.document["job_id"]), a.key)
        for a in actions
        if a.is_item and a.document.get("job_id") is not None
    ]


def resolve(pending: Pending, outcome: Outcome) -> None:
    if not pending.future.done():
        pending.future.set_result(outcome)


def doc_key(action: StoreAction) -> tuple[str, str, str]:
    """Writes that collapse into one: of one document, by one kind of operation (a touch
    never stands in for the full write of its document, nor the reverse)."""
    return action.index, action.doc_id, action.op


def group_by_doc(
    entries: Sequence[_E], action_of: Callable[[_E], StoreAction]
) -> dict[tuple[str, str, str], list[_E]]:
    """Writes of one document in one batch collapse into one (the newest version)."""
    groups: dict[tuple[str, str, str], list[_E]] = {}
    for entry in entries:
        groups.setdefault(doc_key(action_of(entry)), []).append(entry)
    return groups


def chunks(entries: Sequence[_E], size: int) -> Iterator[list[_E]]:
    for start in range(0, len(entries), size):
        yield list(entries[start : start + size])
