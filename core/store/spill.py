"""The spill: durable storage for writes Elasticsearch has not accepted yet.

Two implementations behind ``Spill``: a Redis list per site (``spill_redis.RedisSpill``,
shared by every worker of the site) and a JSON-lines file (``spill_file.FileSpill``, for
a worker without Redis). Both keep a dead-letter list next to the spill for documents
Elasticsearch rejected for good.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict
from typing import Any

from core.keys import REDIS_ERRORS
from core.store.actions import StoreAction
from core.store.layout import iso_ms

DEAD_LETTER_CAP = 100_000
# What a spill raises when its backend is unreachable (Redis spill, file spill).
SPILL_ERRORS = (*REDIS_ERRORS, OSError)

SendFn = Callable[[list[StoreAction]], Awaitable[list[StoreAction]]]


class Spill(ABC):
    """Durable storage for actions Elasticsearch has not accepted yet."""

    description: str
    remedy: str  # what makes it writable again, for the store's give-up line

    @abstractmethod
    async def push(self, actions: Sequence[StoreAction]) -> None: ...

    @abstractmethod
    async def size(self) -> int: ...

    @abstractmethod
    async def drain(self, send: SendFn, *, batch: int, max_batches: int | None = None) -> int:
        """Hand spilled actions to ``send`` (which returns those to keep); one drainer
        at a time. Returns how many left the spill."""

    async def dead_letter(self, action: StoreAction, error: str) -> None:
        """Keep an action Elasticsearch rejected for good, with the error."""
        await self._push_dead({"action": asdict(action), "error": error})

    @abstractmethod
    async def _push_dead(self, entry: dict[str, Any]) -> None:
        """Append one dead-letter entry (``dead_entry`` adds the time)."""


def dead_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """A dead-letter entry stamped with the time it was recorded."""
    return {**entry, "at": iso_ms(int(time.time() * 1000))}
