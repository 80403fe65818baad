"""The hop to Elasticsearch: declare the indices, send one bulk, classify each result.

No retries here (the writer, ``core.store.writer``, is the one layer that retries): each
result is final (indexed, touched, superseded, missing, dead letter) or ``RETRY``. Touches
are read first (one real-time ``mget``) and sent as conditional updates. Item indices are
declared here; other indices by the ``IndexPreparer`` registered in ``INDEX_PREPARERS`` for
their prefix. An index whose declaration is refused for good (400 conflicting mapping,
403) makes every write to it a dead letter at once, naming the fix (``conflict_line``).

Reads: the actions. Details: docs/pipelines.md "Durability" and "Storage in
Elasticsearch".
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from elastic_transport import TransportError
from elasticsearch import ApiError, AsyncElasticsearch
from elasticsearch.helpers import async_streaming_bulk

from core.es_access import is_auth_error
from core.items_schema import UnknownItemType, schema_by_type
from core.store.actions import TOUCH, Outcome, StoreAction
from core.store.layout import IndexLayout, ensure_item_index, epoch_ms
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
# "mapper [price] cannot be changed from type [keyword] to [double]"
_MAPPER_CONFLICT = re.compile(
    r"mapper \[(?P<field>[^\]]+)\] cannot be changed from type \[(?P<old>[^\]]+)\] "
    r"to \[(?P<new>[^\]]+)\]"
)
# Errors that mean "Elasticsearch is unreachable" (not a verdict about a document).
UNREACHABLE = (TransportError, TimeoutError, OSError)

# Elasticsearch's security answers: 401 (credentials refused) is no verdict about a
# document: the store treats it as an outage (items wait, then spill, for a run with the
# right credentials) and reports it (``on_auth``) once. 403 (the user lacks a privilege on
# the index) stays so until a person changes the role: permanent, a dead letter, never a
# retry loop.
AUTH_REFUSED = 401
FORBIDDEN = 403

RETRY = "retry"  # a bulk result that is neither final nor permanent
Result = tuple[Outcome | str, str | None]  # (outcome or RETRY, error text)
PropertiesFor = Callable[[str], Mapping[str, Any] | None]
# Declares a non-item index (templates, aliases) before its first write: (client, index).
IndexPreparer = Callable[[AsyncElasticsearch, str], Awaitable[None]]
# Index name prefix -> its preparer, for every sender without its own (module docstring).
INDEX_PREPARERS: dict[str, IndexPreparer] = {}


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
        preparers: Mapping[str, IndexPreparer] | None = None,
        on_auth: Callable[[ApiError], None] | None = None,
    ) -> None:
        self.es = es
        self._on_auth = on_auth
        self.preparers = INDEX_PREPARERS if preparers is None else dict(preparers)
        self.settings = settings
        self.properties_for = properties_for
        self._count = count
        self._on_down = on_down
        self._on_up = on_up
        self._ensured: set[tuple[str, str] | str] = set()
        # Declarations refused for good: their writes' result, without asking again.
        self._refused: dict[tuple[str, str] | str, Result] = {}

    async def send(self, actions: list[StoreAction]) -> list[Result]:
        """One bulk request (per chunk) for ``actions``; an outcome per action, in order."""
        results: list[Result | None] = [None] * len(actions)
        # Declare each (site, item type) once per call, not once per action: with the
        # node down, 500 actions must not mean 500 failed connection attempts.
        problems: dict[tuple[str, str] | str, Result | None] = {}
        for i, action in enumerate(actions):
            where = _target(action)
            if where not in problems:
                problems[where] = await self._prepare(action)
            results[i] = problems[where]
        reached = False  # Elasticsearch answered a request of this call
        try:
            touches = [i for i, a in enumerate(actions) if a.op == TOUCH and results[i] is None]
            touch_ops = await self._read_touched([actions[i] for i in touches])
            reached = bool(touches)
            for i, op in zip(touches, touch_ops, strict=True):
                if not isinstance(op, dict):
                    results[i] = op
            ops = {i: a.bulk_op() for i, a in enumerate(actions) if a.op != TOUCH}
            ops.update(
                {i: op for i, op in zip(touches, touch_ops, strict=True) if isinstance(op, dict)}
            )
            # Index writes first: a touch of a document written in the same bulk is
            # re-read (409) and applied after it, never before it.
            order = sorted(
                (i for i in ops if results[i] is None), key=lambda i: actions[i].op == TOUCH
            )
            items = [i for i in order if actions[i].is_item]
            others = [i for i in order if not actions[i].is_item]
            for group, require_alias in ((items, True), (others, False)):
                if group:
                    answers = await self._bulk([ops[i] for i in group], require_alias)
                    reached = True
                    for i, answer in zip(group, answers, strict=False):
                        results[i] = answer
        except UNREACHABLE as exc:
            self._on_down(exc)
            error = f"{type(exc).__name__}: {exc}"
            return [(RETRY, error) for _ in actions]
        if reached:
            self._on_up()
        return [r if r is not None else (RETRY, "no result for this document") for r in results]

    async def _bulk(self, ops: list[dict[str, Any]], require_alias: bool) -> list[Result]:
        """The results of ``ops``, in order (the helper answers each chunk in order)."""
        answers: list[Result] = []
        async for ok, info in async_streaming_bulk(
            self.es,
            ops,
            chunk_size=self.settings.bulk_size,
            max_chunk_bytes=self.settings.max_chunk_bytes,
            raise_on_error=False,
            raise_on_exception=False,
            max_retries=0,  # 429s come back per item: the writer retries them
            require_alias=require_alias,
        ):
            ((op_type, data),) = info.items()
            answers.append(self._classify(ok, data, touch=op_type == "update"))
        self._count("store/bulk_requests", 1)
        return answers

    async def _read_touched(self, touches: Sequence[StoreAction]) -> list[dict[str, Any] | Result]:
        """Per touch, its conditional update, or its final result: the document is gone
        (``MISSING``) or already seen as late or later (``SUPERSEDED``, a noop)."""
        if not touches:
            return []
        try:
            response = await self.es.mget(
                docs=[{"_index": a.index, "_id": a.doc_id} for a in touches],
                source_includes=["last_seen"],
            )
        except ApiError as exc:
            self._count(f"store/errors/{exc.error}", 1)
            denied = self._security(exc)
            if denied is not None:
                return [denied for _ in touches]
            return [(RETRY, f"cannot read the documents: {exc}") for _ in touches]
        out: list[dict[str, Any] | Result] = []
        for action, doc in zip(touches, response["docs"], strict=True):
            error = doc.get("error")
            if error is not None:
                kind = error.get("type") if isinstance(error, dict) else None
                # No index behind the alias: nothing was ever stored under it.
                out.append(
                    (Outcome.MISSING, None)
                    if kind == "index_not_found_exception"
                    else (RETRY, f"cannot read the document: {error}")
                )
            elif not doc.get("found"):
                out.append((Outcome.MISSING, None))
            elif _seen_ms(doc.get("_source", {})) >= action.version:
                out.append((Outcome.SUPERSEDED, None))
            else:
                out.append(action.touch_op(int(doc["_seq_no"]), int(doc["_primary_term"])))
        return out

    def _classify(self, ok: bool, data: Mapping[str, Any], *, touch: bool = False) -> Result:
        if ok:
            return (Outcome.TOUCHED if touch else Outcome.INDEXED), None
        status = data.get("status")
        error = data.get("error")
        kind = error.get("type") if isinstance(error, dict) else None
        reason = error.get("reason") if isinstance(error, dict) else str(error)
        text = f"{status} {kind or 'error'}: {reason}"
        exception = data.get("exception")
        if isinstance(exception, ApiError):  # the whole request failed (the helper's form)
            denied = self._security(exception)
            if denied is not None:
                return denied
        elif status == AUTH_REFUSED or (status == FORBIDDEN and kind == "security_exception"):
            return self._denied(status, text)
        if touch and kind == "document_missing_exception":
            return Outcome.MISSING, None
        if status == 409 and kind == "version_conflict_engine_exception":
            # A touch: the document changed since it was read; read it again.
            return (RETRY, text) if touch else (Outcome.SUPERSEDED, None)
        self._count(f"store/errors/{kind or status}", 1)
        if kind in PERMANENT_ERRORS:
            return Outcome.DEAD_LETTER, text
        if kind == "index_not_found_exception":
            self._ensured.clear()  # an alias went away: declare the layout again
        return RETRY, text

    def _security(self, exc: ApiError) -> Result | None:
        """The result of a request Elasticsearch's security refused; None: not that."""
        if not is_auth_error(exc):
            return None  # a 403 block (read-only index) is retried like any block
        status = exc.meta.status
        if self._on_auth is not None:
            self._on_auth(exc)
        if status == AUTH_REFUSED:
            self._on_down(exc)  # no write can succeed: items wait, then spill
            return RETRY, f"401 credentials refused: {_reason(exc)}"
        return self._denied(status, f"403 {_reason(exc)}")

    def _denied(self, status: int, text: str) -> Result:
        if status == AUTH_REFUSED:
            return RETRY, text
        self._count("store/errors/forbidden", 1)
        return Outcome.DEAD_LETTER, (
            f"{text} (permanent: the Elasticsearch user lacks a privilege on this index; "
            "grant it in its role, then replay the dead letters)"
        )

    async def _prepare(self, action: StoreAction) -> Result | None:
        """Make sure the index ``action`` writes to exists; its result if not (yet)."""
        where = _target(action)
        if where in self._ensured:
            return None
        if where in self._refused:
            return self._refused[where]
        try:
            if action.is_item:
                await ensure_item_index(
                    self.es,
                    action.site,
                    action.item_type,
                    self.properties_for(action.item_type),
                    replicas=self.settings.replicas,
                )
            else:
                prefix = next((p for p in self.preparers if action.index.startswith(p)), None)
                if prefix is not None:
                    await self.preparers[prefix](self.es, action.index)
        except UNREACHABLE as exc:
            self._on_down(exc)
            return RETRY, f"cannot declare the index: {type(exc).__name__}: {exc}"
        except ApiError as exc:
            denied = self._security(exc)
            if denied is not None:
                if denied[0] == Outcome.DEAD_LETTER:  # a 403: not asked again either
                    self._refused[where] = denied
                return denied
            if exc.meta.status == 400 and exc.error in PERMANENT_ERRORS:
                self._count(f"store/errors/{exc.error}", 1)
                result = self._refused[where] = (Outcome.DEAD_LETTER, conflict_line(action, exc))
                return result
            logger.error("cannot declare the index of %s: %s", where, exc)
            return RETRY, f"cannot declare the index: {exc}"
        except UnknownItemType as exc:
            logger.error("cannot declare the index of %s: %s", where, exc)
            return RETRY, f"cannot declare the index: {exc}"
        self._ensured.add(where)
        return None


def conflict_line(action: StoreAction, exc: ApiError) -> str:
    """A declaration refused for good, with the fix: the concrete index the alias points
    at keeps a mapping the item's schema cannot have."""
    reason = _reason(exc)
    layout = IndexLayout
    index = layout.index(action.site, action.item_type) if action.is_item else action.index
    conflict = _MAPPER_CONFLICT.search(reason)
    what = (
        f"a conflicting mapping for field {conflict['field']} ({conflict['old']} there, "
        f"{conflict['new']} in the {action.item_type} schema)"
        if conflict
        else f"a mapping Elasticsearch will not change ({reason})"
    )
    new = layout.index(action.site, action.item_type, 2)
    fix = (
        f"reindex it into a new version with the schema's mapping ({new}) and move the "
        f"aliases to it, or drop it (DELETE /{index}: its documents are lost), then crawl again"
        if action.is_item
        else f"reindex or drop it (DELETE /{index}), then crawl again"
    )
    return (
        f"{exc.meta.status} {exc.error}: index {index} has {what}: every write to it is "
        f"refused (kept in the dead letters, not retried); {fix}"
    )


def _reason(exc: ApiError) -> str:
    """Elasticsearch's own reason for a refusal (its body's ``error.reason``)."""
    body = exc.body
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping) and error.get("reason"):
            return str(error["reason"])
    return str(exc.message)


def _target(action: StoreAction) -> tuple[str, str] | str:
    """What is declared for an action: its (site, item type), or its other index."""
    return (action.site, action.item_type) if action.is_item else action.index


def _seen_ms(source: Mapping[str, Any]) -> int:
    value = source.get("last_seen")
    return epoch_ms(value) if isinstance(value, str) else 0
