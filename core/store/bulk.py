"""The hop to Elasticsearch: declare the indices, send one bulk, classify each result.

No retries here (the client's and the bulk helper's are off): a result is final
(indexed, superseded, dead letter) or ``RETRY``, and the writer (``core.store.writer``)
is the one layer that retries, with backoff, then spills.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from elastic_transport import TransportError
from elasticsearch import ApiError, AsyncElasticsearch
from elasticsearch.helpers import async_streaming_bulk

from core.items_schema import UnknownItemType, schema_by_type
from core.store.actions import Outcome, StoreAction
from core.store.layout import ensure_item_index
from core.store.settings import StoreSettings

logger = logging.getLogger(__name__)

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
# Errors that mean "Elasticsearch is unreachable" (not a verdict about a document).
UNREACHABLE = (TransportError, TimeoutError, OSError)

RETRY = "retry"  # a bulk result that is neither final nor permanent
Result = tuple[Outcome | str, str | None]  # (outcome or RETRY, error text)
PropertiesFor = Callable[[str], Mapping[str, Any] | None]


def schema_properties(item_type: str) -> Mapping[str, Any] | None:
    """The mapping of a declared item type; None if this process does not know it."""
    try:
        return schema_by_type(item_type).es_properties
    except UnknownItemType:
        return None


class BulkSender:
    """Sends actions in bulk requests and reports each one's outcome, in order."""

    def __init__(
        self,
        es: AsyncElasticsearch,
        settings: StoreSettings,
        *,
        properties_for: PropertiesFor,
        count: Callable[[str, int], None],
        on_down: Callable[[BaseException], None],
        on_up: Callable[[], None],
    ) -> None:
        self.es = es
        self.settings = settings
        self.properties_for = properties_for
        self._count = count
        self._on_down = on_down
        self._on_up = on_up
        self._ensured: set[tuple[str, str]] = set()

    async def send(self, actions: list[StoreAction]) -> list[Result]:
        """One bulk request (per chunk) for ``actions``; an outcome per action, in order."""
        results: dict[str, Result] = {}
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
                results[action.doc_id] = (RETRY, problem)
        if sendable:
            try:
                async for ok, info in async_streaming_bulk(
                    self.es,
                    [a.bulk_op() for a in sendable],
                    chunk_size=self.settings.bulk_size,
                    max_chunk_bytes=self.settings.max_chunk_bytes,
                    raise_on_error=False,
                    raise_on_exception=False,
                    max_retries=0,  # 429s come back per item: the writer retries them
                    require_alias=True,
                ):
                    ((_, data),) = info.items()
                    results[str(data.get("_id"))] = self._classify(ok, data)
                self._count("store/bulk_requests", 1)
            except UNREACHABLE as exc:
                self._on_down(exc)
                error = f"{type(exc).__name__}: {exc}"
                return [(RETRY, error) for _ in actions]
            self._on_up()
        return [results.get(a.doc_id, (RETRY, "no result for this document")) for a in actions]

    def _classify(self, ok: bool, data: Mapping[str, Any]) -> Result:
        if ok:
            return Outcome.INDEXED, None
        status = data.get("status")
        error = data.get("error")
        kind = error.get("type") if isinstance(error, dict) else None
        reason = error.get("reason") if isinstance(error, dict) else str(error)
        text = f"{status} {kind or 'error'}: {reason}"
        if status == 409 and kind == "version_conflict_engine_exception":
            return Outcome.SUPERSEDED, None
        self._count(f"store/errors/{kind or status}", 1)
        if kind in PERMANENT_ERRORS:
            return Outcome.DEAD_LETTER, text
        if kind == "index_not_found_exception":
            self._ensured.clear()  # an alias went away: declare the layout again
        return RETRY, text

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
        except UNREACHABLE as exc:
            self._on_down(exc)
            return f"cannot declare the index: {type(exc).__name__}: {exc}"
        except (ApiError, UnknownItemType) as exc:
            logger.error("cannot declare the index of %s/%s: %s", site, item_type, exc)
            return f"cannot declare the index: {exc}"
        self._ensured.add((site, item_type))
        return None
