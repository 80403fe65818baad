"""The store's tunables, built from the crawl's settings (``STORE_*``).

The defaults of the ``STORE_*`` settings live in the crawler settings, written once;
``StoreSettings.from_settings`` reads them and repeats none. What is not a setting
(internal pacing of the writer's loop) has its value here, and only here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol

from core.store.layout import replicas_setting


class SettingsReader(Protocol):
    """What is read from a settings object (``scrapy.settings.BaseSettings`` fits)."""

    def get(self, name: str, default: Any = None) -> Any: ...


class MissingSetting(LookupError):
    """A setting the store needs has no value: the platform's defaults are not loaded."""


@dataclass(frozen=True)
class StoreSettings:
    bulk_size: int  # STORE_BULK_SIZE
    flush_interval: float  # STORE_FLUSH_INTERVAL; the drain step must wait past it
    max_buffer: int  # STORE_MAX_BUFFER; beyond, new items go to the spill
    spill_after: float  # STORE_SPILL_AFTER: s of failed retries before the spill
    max_item_retries: int  # STORE_MAX_ITEM_RETRIES
    retry_backoff: float  # STORE_RETRY_BACKOFF, doubled per attempt ...
    retry_backoff_max: float  # ... up to STORE_RETRY_BACKOFF_MAX
    close_timeout: float  # STORE_CLOSE_TIMEOUT
    replicas: int | None  # STORE_INDEX_REPLICAS; None: auto (core.store.layout)
    # Not settings: the pace of the writer's own loop.
    spill_check_interval: float = 5.0  # how often the loop looks for others' spill
    # The spill-drain lock's lease, renewed while a drain runs: a killed drainer's lock
    # is taken over this many seconds later (plus one spill check).
    spill_lock_seconds: float = 6.0
    probe_interval: float = 1.0  # while Elasticsearch is down
    dead_after_attempts: int = 50  # a spilled action failing this often is dead-lettered
    max_chunk_bytes: int = 20 * 1024 * 1024

    @classmethod
    def from_settings(cls, settings: SettingsReader, **overrides: Any) -> StoreSettings:
        """The store's settings from ``STORE_*`` (``overrides`` win, e.g. in tests)."""
        built = cls(
            bulk_size=int(required(settings, "STORE_BULK_SIZE")),
            flush_interval=float(required(settings, "STORE_FLUSH_INTERVAL")),
            max_buffer=int(required(settings, "STORE_MAX_BUFFER")),
            spill_after=float(required(settings, "STORE_SPILL_AFTER")),
            max_item_retries=int(required(settings, "STORE_MAX_ITEM_RETRIES")),
            retry_backoff=float(required(settings, "STORE_RETRY_BACKOFF")),
            retry_backoff_max=float(required(settings, "STORE_RETRY_BACKOFF_MAX")),
            close_timeout=float(required(settings, "STORE_CLOSE_TIMEOUT")),
            replicas=replicas_setting(required(settings, "STORE_INDEX_REPLICAS")),
        )
        return replace(built, **overrides)

    def backoff(self, attempts: int) -> float:
        """Seconds before retry number ``attempts`` (1-based) of an item."""
        return float(min(self.retry_backoff_max, self.retry_backoff * 2 ** (attempts - 1)))


def required(settings: SettingsReader, name: str) -> Any:
    """The value of ``name``; ``MissingSetting`` rather than a silent 0 when unset."""
    value = settings.get(name)
    if value is None:
        raise MissingSetting(f"{name} is not set (the platform's default settings are not loaded)")
    return value
