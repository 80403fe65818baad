"""One document write (``StoreAction``), how it is built from an item, and its outcomes.

Every write is a full ``index`` operation with ``version_type=external_gte`` and
``version = last_seen`` (epoch ms): re-sending a write (retry, spill replay, a worker
killed before its ack) is idempotent, and a stale write that arrives after a newer one
is refused by Elasticsearch (409, counted as ``superseded``) instead of overwriting it.
``first_seen`` and ``last_changed`` are what dedup decided (``core.dedup.detector``): the store
writes them as given and never works them out itself.

A **touch** (``build_touch``: an item seen unchanged without its content, a 304 or an
unchanged listing card) is a partial update of the stored document that moves
``last_seen`` and ``job_id`` only, and only forward; it never creates a document. The
node has no scripting (no painless, docs/elasticsearch-node.md), so the condition is a
compare-and-set done by ``core.store.bulk``: a real-time read of the document's
``last_seen`` and sequence number, then an ``update`` with ``if_seq_no`` /
``if_primary_term``. An older or equal ``last_seen`` is a noop (``superseded``: a
replay is idempotent), a document changed in between is re-read (retried), a missing
one is ``Outcome.MISSING`` (its item is then fetched in full). Spill entries without an
``op`` (written before touches existed) are index writes.

Actions of other indices (a helper's ``changes-<site>`` documents) are plain index
writes too; only ``items-*`` actions are item writes (``is_item``): declared by the
store, sent with ``require_alias`` and recorded in the job's ledger.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from dataclasses import fields as dataclass_fields
from typing import Any

from core.store.layout import IndexLayout, doc_id_for, iso_ms

INDEX, TOUCH = "index", "touch"
ITEMS_PREFIX = "items-"


@dataclass
class StoreAction:
    """One document write, JSON-serialisable so it can wait in the spill."""

    key: str
    site: str
    item_type: str
    doc_id: str
    index: str  # the write alias
    version: int  # external version = last_seen, epoch ms
    document: dict[str, Any]
    attempts: int = 0
    error: str | None = None
    op: str = INDEX  # INDEX: the full document; TOUCH: last_seen/job_id moved forward

    @property
    def is_item(self) -> bool:
        """A write of an item document (``items-*``), not of another index."""
        return self.index.startswith(ITEMS_PREFIX)

    def bulk_op(self) -> dict[str, Any]:
        """The bulk operation of an INDEX action (a TOUCH needs ``touch_op``)."""
        return {
            "_op_type": "index",
            "_index": self.index,
            "_id": self.doc_id,
            "version": self.version,
            "version_type": "external_gte",
            "_source": self.document,
        }

    def touch_op(self, seq_no: int, primary_term: int) -> dict[str, Any]:
        """The bulk operation of a TOUCH, conditional on the document read at
        ``seq_no``/``primary_term`` (an update never creates a document)."""
        return {
            "_op_type": "update",
            "_index": self.index,
            "_id": self.doc_id,
            "if_seq_no": seq_no,
            "if_primary_term": primary_term,
            "doc": self.document,
        }

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: bytes | str) -> StoreAction:
        data = json.loads(raw)
        # Spill entries outlive releases: fields this version no longer has are ignored.
        return cls(**{name: data[name] for name in _FIELDS if name in data})


_FIELDS = tuple(f.name for f in dataclass_fields(StoreAction))


def build_action(
    *,
    site: str,
    item_type: str,
    key: str,
    fields: Mapping[str, Any],
    content_hash: str,
    job_id: str | None,
    seen_ms: int,
    first_seen_ms: int,
    last_changed_ms: int,
) -> StoreAction:
    """The document write for an item (``fields``: its fields as plain data), carrying
    the timestamps of its dedup verdict."""
    document = {name: value for name, value in fields.items() if name != "job_id"}
    document.update(
        item_key=key,
        site=site,
        item_type=item_type,
        job_id=job_id,
        extracted_job_id=job_id,  # a full write: the item's page was read in this job
        content_hash=content_hash,
        first_seen=iso_ms(first_seen_ms),
        last_seen=iso_ms(seen_ms),
        last_changed=iso_ms(last_changed_ms),
    )
    return StoreAction(
        key=key,
        site=site,
        item_type=item_type,
        doc_id=doc_id_for(key),
        index=IndexLayout.write_alias(site, item_type),
        version=seen_ms,
        document=document,
    )


def build_touch(
    *, site: str, item_type: str, key: str, job_id: str | None, seen_ms: int
) -> StoreAction:
    """The touch of an item seen unchanged at ``seen_ms`` (see the module docstring)."""
    return StoreAction(
        key=key,
        site=site,
        item_type=item_type,
        doc_id=doc_id_for(key),
        index=IndexLayout.write_alias(site, item_type),
        version=seen_ms,
        document={"last_seen": iso_ms(seen_ms), "job_id": job_id},
        op=TOUCH,
    )


class Outcome(enum.StrEnum):
    INDEXED = "indexed"
    TOUCHED = "touched"  # a touch moved the document's last_seen/job_id
    SUPERSEDED = "superseded"  # a newer write of the same document was already there
    MISSING = "missing"  # a touch found no document (never created by one)
    SPILLED = "spilled"
    DEAD_LETTER = "dead_letter"


class StoreUnavailable(RuntimeError):
    """Neither Elasticsearch nor the spill could take an item in time (given up)."""


class DeadLettered(RuntimeError):
    """Elasticsearch rejected the document for good; it is kept in the dead-letter list.
    ``repeated``: its cause (index and kind of error) was already reported."""

    def __init__(self, error: str | None, *, repeated: bool = False) -> None:
        super().__init__(error)
        self.repeated = repeated
