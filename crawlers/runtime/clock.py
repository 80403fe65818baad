"""The crawl's shared clock: Redis' ``TIME`` as seen from this worker.

A time that one worker writes and another acts on (a part's ``not_before``, queued again
in the frontier and sent by whichever worker leases it) must not depend on either
worker's own clock: a worker an hour behind would send it an hour late, one ahead too
early. ``SharedClock.now()`` is the local clock plus an offset to Redis' clock, sampled
when the spider opens and again every ``REFRESH_SECONDS`` (one ``TIME`` round trip, the
round trip's midpoint taken as the local instant). Without ``REDIS_URL`` (a local crawl,
one process) the offset stays 0. One per crawl: ``CrawlServices.of(crawler).clock``.
"""

from __future__ import annotations

import logging
import time

from core.keys import REDIS_ERRORS
from crawlers.runtime.ledger import CrawlLedger

logger = logging.getLogger(__name__)

REFRESH_SECONDS = 60.0
# An offset this large is worth one line: the host's clock (NTP) needs fixing.
SKEW_WARNING_SECONDS = 5.0


class SharedClock:
    def __init__(self, ledger: CrawlLedger | None) -> None:
        self.ledger = ledger
        self.offset = 0.0
        self._sampled_at: float | None = None  # monotonic
        self._warned = False

    async def spider_opened(self) -> None:
        await self.refresh()

    def now(self) -> float:
        """Epoch seconds on the shared clock."""
        return time.time() + self.offset

    async def refresh(self) -> None:
        """Sample the offset again when the last sample is older than ``REFRESH_SECONDS``.

        Redis away: the last offset stays (a clock drifts by milliseconds per minute)."""
        if self.ledger is None:
            return
        if self._sampled_at is not None and time.monotonic() - self._sampled_at < REFRESH_SECONDS:
            return
        before = time.time()
        try:
            shared = await self.ledger.redis_time()
        except REDIS_ERRORS as exc:
            logger.debug("shared clock not sampled (%s); keeping offset", type(exc).__name__)
            return
        after = time.time()
        self.offset = shared - (before + after) / 2
        self._sampled_at = time.monotonic()
        if abs(self.offset) > SKEW_WARNING_SECONDS and not self._warned:
            self._warned = True
            logger.warning(
                "this host's clock is %.1fs %s Redis' clock; the crawl uses Redis' clock for "
                "timestamps, but fix the host's time sync (NTP)",
                abs(self.offset),
                "behind" if self.offset > 0 else "ahead of",
            )
