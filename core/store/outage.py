"""Elasticsearch's availability as the store's writer sees it: when it went down, when
it was last probed, and one log line per state change (the client's own per-attempt
lines are quiet in crawls: ``crawlers.runtime.logs``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from elasticsearch import ApiError

from core.store.settings import StoreSettings

logger = logging.getLogger("core.store.writer")  # the writer's lines, as before the split


class Outage:
    def __init__(
        self,
        settings: StoreSettings,
        *,
        count: Callable[[str], None],
        spill: Callable[[], str | None],
    ) -> None:
        self.settings = settings
        self.count = count
        self.spill = spill  # the spill's description (None: no spill)
        self.since: float | None = None  # monotonic; None while Elasticsearch answers
        self.last_probe = 0.0

    def down_for(self, now: float) -> float | None:
        """Seconds Elasticsearch has been down, if longer than ``spill_after``."""
        if self.since is None:
            return None
        down = now - self.since
        return down if down >= self.settings.spill_after else None

    def mark_down(self, exc: BaseException) -> None:
        if self.since is None:
            self.since = time.monotonic()
            self.last_probe = self.since
            self.count("store/outages")
            refused = isinstance(exc, ApiError)  # 401: answered, but not for us
            logger.warning(
                "Elasticsearch %s (%s: %s); retrying every %gs, items wait up to "
                "%gs, then go to the spill (%s)",
                "refuses the credentials" if refused else "unreachable",
                type(exc).__name__,
                str(exc).splitlines()[0][:200],
                self.settings.probe_interval,
                self.settings.spill_after,
                self.spill() or "none: kept in memory",
            )

    def mark_up(self) -> bool:
        """Elasticsearch answers again; True when it was down (one line)."""
        if self.since is None:
            return False
        logger.info("Elasticsearch reachable again after %.1fs", time.monotonic() - self.since)
        self.since = None
        return True
