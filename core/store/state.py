"""Dedup state read back from the stored documents: change detection without Redis.

Local mode (``scrapy crawl`` with Elasticsearch and no Redis) has no dedup state of its
own: what an item was last time is its stored document (``content_hash``,
``first_seen``, ``last_changed``). ``DocumentState`` is the ``core.dedup.detector.ChangeState``
backend that reads it, one real-time ``mget`` per batch, and decides with the same rule
(``core.dedup.detector.decide``), so the store only ever writes what dedup decided.

The store writes a document a little after dedup decided (the bulk window), so decisions
of the last ``recent`` keys are remembered: an item seen twice in that window is judged
against its first sighting, and keeps its strongest verdict within a job, counted once
(``items/<verdict>`` through ``on_count``: the job's exact counts, as the Redis script
keeps them).

An item seen without its content (``ChangeState.seen``: a 304, an unchanged listing card)
is judged the same way against its stored document (or an earlier decision): unknown
(None) when there is neither, else ``unchanged`` or a stronger verdict it already has in
the job.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from elastic_transport import TransportError
from elasticsearch import ApiError, AsyncElasticsearch

from core.dedup.detector import UNCHANGED, ChangeState, ItemState, Known, Request, decide, now_ms
from core.store.layout import doc_id_for, epoch_ms, index_for_key

_SOURCE = ["content_hash", "first_seen", "last_changed"]


@dataclass(frozen=True)
class _Decided:
    job_id: str
    state: ItemState


class DocumentState(ChangeState):
    """``ChangeState`` from the stored item documents (see the module docstring)."""

    transient_errors = (TransportError, ApiError, TimeoutError, OSError)

    def __init__(
        self,
        es: AsyncElasticsearch,
        *,
        on_count: Callable[[str, int], None] | None = None,
        recent: int = 50_000,
    ) -> None:
        super().__init__()
        self.es = es
        self.description = "the stored documents (Elasticsearch)"
        self._on_count = on_count
        self._recent: OrderedDict[str, _Decided] = OrderedDict()
        self._recent_max = recent

    async def classify_batch(self, batch: Sequence[Request]) -> list[ItemState | Exception | None]:
        stored = await self._stored({r.key for r in batch if r.key not in self._recent})
        results: list[ItemState | Exception | None] = []
        for r in batch:
            earlier = self._recent.get(r.key)
            if earlier is not None:
                s = earlier.state
                known: Known | None = Known(s.content_hash, s.first_seen_ms, s.last_changed_ms)
                prior = s.verdict if earlier.job_id == r.job_id else None
            else:
                known, prior = stored.get(r.key), None
            if r.seen and known is None:
                results.append(None)  # state gone: fetched in full, nothing counted
                continue
            # One process, so its own clock (local mode has no shared one).
            seen = now_ms() if r.seen_ms is None else r.seen_ms
            # A seen item has the content it had: the known hash.
            digest = known.content_hash if r.seen and known is not None else r.content_hash
            state = decide(r.key, known, digest, seen, prior)
            self._remember(r.job_id, state)
            if state.verdict != prior:
                self._count(f"items/{state.verdict}", 1)
                if prior is not None:
                    self._count(f"items/{prior}", -1)
            results.append(state)
        return results

    async def unsee(self, job_id: str, key: str) -> bool:
        # One process: the job's decisions are this process's (no stored-items ledger).
        earlier = self._recent.get(key)
        if earlier is None or earlier.job_id != job_id or earlier.state.verdict != UNCHANGED:
            return False
        del self._recent[key]
        self._count(f"items/{UNCHANGED}", -1)
        return True

    async def _stored(self, keys: set[str]) -> dict[str, Known]:
        """``Known`` of each key with a stored document (real time: no refresh needed)."""
        if not keys:
            return {}
        wanted = sorted(keys)
        response = await self.es.mget(
            docs=[{"_index": index_for_key(k), "_id": doc_id_for(k)} for k in wanted],
            source_includes=_SOURCE,
        )
        known: dict[str, Known] = {}
        for key, doc in zip(wanted, response["docs"], strict=True):
            error = doc.get("error")
            if error is not None:
                # The first crawl of an item type: its write alias does not exist yet.
                if _error_type(error) == "index_not_found_exception":
                    continue
                raise ApiError(str(error), meta=response.meta, body=doc)
            if doc.get("found"):
                known[key] = _known(doc["_source"])
        return known

    def _remember(self, job_id: str, state: ItemState) -> None:
        self._recent[state.key] = _Decided(job_id, state)
        self._recent.move_to_end(state.key)
        while len(self._recent) > self._recent_max:
            self._recent.popitem(last=False)

    def _count(self, name: str, n: int) -> None:
        if self._on_count is not None:
            self._on_count(name, n)


def _known(source: Mapping[str, Any]) -> Known:
    # Every document carries all three; ``or`` covers one written by hand without them.
    first = source.get("first_seen") or source.get("last_seen")
    first_ms = epoch_ms(first) if first else 0
    changed = source.get("last_changed")
    return Known(
        str(source.get("content_hash")), first_ms, epoch_ms(changed) if changed else first_ms
    )


def _error_type(error: Any) -> str | None:
    return error.get("type") if isinstance(error, dict) else None
