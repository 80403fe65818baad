"""What the writer (``core.store.writer``) says and does when a write cannot be made
durable, each cause said once:

* a write Elasticsearch rejects for good goes to the dead letters: one ERROR line per
  index and kind of error (a conflicting mapping refuses every item of the index alike),
  the rest at DEBUG, every one counted ``store/dead_letter``;
* a spill that cannot be written: one WARNING when it starts failing (and an INFO line
  when it works again), not one per attempt; the items wait in memory;
* an item that could be neither written nor spilled for ``STORE_CLOSE_TIMEOUT`` seconds
  is given up (``StoreUnavailable``, counted ``store/unsaved``): one ERROR line naming the
  spill, its error, the number of items and the fix, handed to ``on_failed`` once (the
  crawl closes, reason ``store_failed``). Once the store has given up, an item that fails
  the same way is given up at once rather than after another timeout.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from core.store.actions import StoreAction, StoreUnavailable
from core.store.batch import Pending
from core.store.bulk import FORBIDDEN
from core.store.settings import StoreSettings
from core.store.spill import SPILL_ERRORS, Spill

logger = logging.getLogger("core.store.writer")  # the writer's lines


class Failures:
    def __init__(
        self,
        settings: StoreSettings,
        *,
        spill: Callable[[], Spill | None],
        count: Callable[[str, int], None],
        on_failed: Callable[[str], None] | None = None,
    ) -> None:
        self.settings = settings
        self._spill = spill
        self._count = count
        self._on_failed = on_failed
        self.spill_error: BaseException | None = None  # while the spill cannot be written
        self.gave_up = False
        self.line: str | None = None  # the give-up line, once given
        self._logged: set[tuple[str, str]] = set()  # (index, kind) of dead letters logged

    @property
    def patience(self) -> float:
        """Seconds an item may wait neither written nor spilled (0 once given up)."""
        return 0.0 if self.gave_up else self.settings.close_timeout

    def spill_failed(self, exc: BaseException) -> None:
        if self.spill_error is None:
            logger.warning(
                "spill unavailable (%s: %s: %s); items wait in memory for Elasticsearch, "
                "at most STORE_CLOSE_TIMEOUT=%gs, then are given up",
                self._description(),
                type(exc).__name__,
                exc,
                self.settings.close_timeout,
            )
        self.spill_error = exc

    def spill_ok(self) -> None:
        if self.spill_error is not None:
            logger.info("spill available again (%s)", self._description())
        self.spill_error = None

    def give_up(self, stuck: Sequence[Pending]) -> None:
        """Fail ``stuck`` items (neither written nor spilled in time): counted, one ERROR
        line for the store's first give-up."""
        unsaved = [p for p in stuck if not p.future.done()]
        if not unsaved:
            return
        self._count("store/unsaved", len(unsaved))
        line = self._line(len(unsaved), unsaved[-1].action.error)
        if not self.gave_up:
            self.gave_up, self.line = True, line
            logger.error("%s", line)
            if self._on_failed is not None:
                self._on_failed(line)
        else:
            logger.debug("%s", line)
        for p in unsaved:
            p.future.set_exception(StoreUnavailable("neither stored nor spilled: " + line))

    def _line(self, n: int, es_error: str | None) -> str:
        spill = self._spill()
        if spill is None:
            where = "there is no spill"
            fix = "Elasticsearch"
        else:
            error = self.spill_error
            why = f" ({type(error).__name__}: {error})" if error is not None else ""
            where = f"the spill ({spill.description}) cannot be written{why}"
            fix = f"the spill ({spill.remedy}) or Elasticsearch"
        return (
            f"store gave up on {n} items after STORE_CLOSE_TIMEOUT="
            f"{self.settings.close_timeout:g}s: Elasticsearch did not take them (last error: "
            f"{es_error or 'none'}) and {where}; they are not stored: fix {fix}, then crawl "
            "again"
        )

    async def dead_letter(self, action: StoreAction, error: str) -> bool:
        """Keep ``action`` in the dead letters; one ERROR per index and kind of error.
        True when this was the first of its kind (the one reported)."""
        self._count("store/dead_letter", 1)
        kind = _kind(error)
        first = (action.index, kind) not in self._logged
        self._logged.add((action.index, kind))
        if error.startswith(f"{FORBIDDEN} "):
            text = f"Elasticsearch refused writes to {action.index} for good: {error}"
        else:
            text = f"Elasticsearch rejected {action.key} for good: {error}"
        if first:
            logger.error(
                "%s (further %s rejections of %s: DEBUG, counted in store/dead_letter)",
                text,
                kind,
                action.index,
            )
        else:
            logger.debug("%s", text)
        spill = self._spill()
        if spill is not None:
            try:
                await spill.dead_letter(action, error)
            except SPILL_ERRORS as exc:
                logger.error("could not record the dead letter of %s: %s", action.key, exc)
        return first

    def _description(self) -> str:
        spill = self._spill()
        return spill.description if spill is not None else "none"


def _kind(error: str) -> str:
    """``mapper_parsing_exception`` of ``400 mapper_parsing_exception: ...``."""
    head = error.split(":", 1)[0].split()
    return head[1] if len(head) > 1 else (head[0] if head else "error")
