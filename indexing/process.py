"""The llm-process step: a drained job's new and changed items -> chunks -> vectors -> index.

``process_job(es, redis, site, job_id, embedder)`` reads the job's new/changed item keys
from the dedup state (``core.dedup.detector``) and the removed items it restored
(``core.recrawl.removals``), loads those items from ``items-<site>``, and for
each one whose chunks are not already up to date: chunks it, embeds the chunks and writes
them to ``chunks-<site>`` in bulk requests.

Idempotent, and safe to re-run after a crash at any point:

* every chunk carries a ``source_hash`` = hash(item content hash, chunker settings,
  embedder). An item whose stored chunks all carry the current source hash, at exactly
  positions ``0..n_chunks-1``, is skipped without being embedded again: a re-run of the
  same job writes nothing.
* a changed item's chunks are overwritten in place (same ids ``<item id>:<position>``),
  and when it now has fewer chunks the surplus old ids are deleted in the same bulk
  request. Without ``_delete_by_query`` (the node lacks it), the old ids come from a
  ``terms`` search on ``item_key``. A half-applied bulk leaves chunks with an old source
  hash or stray positions, so the next run sees the item as not up to date and redoes it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from elasticsearch import Elasticsearch
from elasticsearch.helpers import scan, streaming_bulk

from core.dedup.detector import job_changes
from core.recrawl.removals import restored_keys
from core.redis_client import Client
from core.store import get_items, item_keys
from indexing.chunking import Chunk, Chunker
from indexing.embedders import Embedder
from indexing.index import ensure_chunks_index

logger = logging.getLogger(__name__)

ITEM_BATCH = 64
BULK_CHUNK_SIZE = 500
MAX_ERRORS_SHOWN = 5
MAX_ERRORS_KEPT = 100


Progress = Callable[["ProcessReport", int], None]


class ChunkIndexError(RuntimeError):
    """Some chunk writes were refused; the step can be re-run (it is idempotent)."""

    def __init__(self, message: str, report: ProcessReport) -> None:
        super().__init__(message)
        self.report = report  # what the run did nonetheless, for the flow's report


@dataclass
class ProcessReport:
    """What one run of the step did."""

    site: str
    job_id: str | None
    embedder: str
    items: int = 0  # item keys the run was asked to process
    processed: int = 0  # items chunked, embedded and written
    skipped_unchanged: int = 0  # items whose chunks were already up to date
    missing: int = 0  # keys without an item document (dead-lettered, or deleted)
    chunks_embedded: int = 0
    removed: int = 0  # items marked removed (core.recrawl.removals): never chunked
    chunks_written: int = 0
    chunks_deleted: int = 0
    failed_writes: int = 0
    errors: list[str] = field(default_factory=list)  # the first MAX_ERRORS_KEPT of them
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- the one integration point with the item pipelines' dedup state --------------------------


def job_item_keys(server: Client, site: str, job_id: str) -> frozenset[str]:
    """Keys of the items the job found new or changed (``core.dedup.detector``), and of the removed
    items it saw again (``core.recrawl.removals``: their chunks were deleted, even if unchanged)."""
    return job_changes(server, site, job_id).new_or_changed | restored_keys(server, site, job_id)


# -- entry points ------------------------------------------------------------------------------


def process_job(
    es: Elasticsearch,
    server: Client,
    site: str,
    job_id: str,
    embedder: Embedder,
    *,
    chunker: Chunker | None = None,
    batch_size: int = ITEM_BATCH,
    on_batch: Progress | None = None,
    language: str | None = None,
) -> ProcessReport:
    """Chunk, embed and index the job's new/changed items (see the module docstring).
    ``on_batch(report, items done)`` runs after each batch (the flow's progress);
    ``language``: the site's, for the text analyzer of a new chunks index."""
    keys = job_item_keys(server, site, job_id)
    return process_items(
        es,
        site,
        keys,
        embedder,
        chunker=chunker,
        batch_size=batch_size,
        job_id=job_id,
        on_batch=on_batch,
        language=language,
    )


def backfill_site(
    es: Elasticsearch,
    site: str,
    embedder: Embedder,
    *,
    chunker: Chunker | None = None,
    batch_size: int = ITEM_BATCH,
    language: str | None = None,
) -> ProcessReport:
    """Every item of the site (a new chunks index, a backend switch); up-to-date ones skip."""
    keys = item_keys(es, site)
    return process_items(
        es, site, keys, embedder, chunker=chunker, batch_size=batch_size, language=language
    )


def process_items(
    es: Elasticsearch,
    site: str,
    keys: Iterable[str],
    embedder: Embedder,
    *,
    chunker: Chunker | None = None,
    batch_size: int = ITEM_BATCH,
    job_id: str | None = None,
    on_batch: Progress | None = None,
    language: str | None = None,
) -> ProcessReport:
    """Bring the chunks of ``keys`` up to date with their item documents."""
    started = time.perf_counter()
    chunker = chunker or Chunker()
    ordered = sorted(set(keys))
    report = ProcessReport(site=site, job_id=job_id, embedder=embedder.name, items=len(ordered))
    if ordered:
        index = ensure_chunks_index(es, site, embedder, language=language)
        fingerprint = _fingerprint(chunker, embedder)
        for start in range(0, len(ordered), batch_size):
            batch = ordered[start : start + batch_size]
            _process_batch(es, index, batch, embedder, chunker, fingerprint, report)
            if on_batch is not None:
                report.seconds = round(time.perf_counter() - started, 3)
                on_batch(report, start + len(batch))
        es.indices.refresh(index=index)
    report.seconds = round(time.perf_counter() - started, 3)
    logger.info("llm-process %s", report.as_dict())
    if report.failed_writes:
        shown = "; ".join(report.errors[:MAX_ERRORS_SHOWN])
        raise ChunkIndexError(
            f"{report.failed_writes} chunk writes failed for {site} (re-run the step): {shown}",
            report,
        )
    return report


# -- one batch ---------------------------------------------------------------------------------


def _process_batch(
    es: Elasticsearch,
    index: str,
    keys: Sequence[str],
    embedder: Embedder,
    chunker: Chunker,
    fingerprint: str,
    report: ProcessReport,
) -> None:
    items = _load_items(es, report.site, keys)
    existing = _existing_chunks(es, index, keys)
    report.missing += len(keys) - len(items)
    todo: list[tuple[Mapping[str, Any], str]] = []
    for key in keys:
        doc = items.get(key)
        if doc is None:
            continue
        if doc.get("removed_at"):
            report.removed += 1  # gone from the site: its chunks were deleted on purpose
            continue
        source_hash = _source_hash(doc, fingerprint)
        if _up_to_date(existing.get(key, []), source_hash):
            report.skipped_unchanged += 1
        else:
            todo.append((doc, source_hash))
    if not todo:
        return
    chunked = [(item, source_hash, chunker.chunk_item(item)) for item, source_hash in todo]
    texts = [c.text for _, _, chunks in chunked for c in chunks]
    vectors = iter(embedder.embed(texts))
    report.chunks_embedded += len(texts)
    now = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    actions: list[dict[str, Any]] = []
    for item, source_hash, chunks in chunked:
        for chunk in chunks:
            actions.append(
                _index_action(index, chunk, next(vectors), item, source_hash, embedder, now)
            )
        fresh = {chunk.chunk_id for chunk in chunks}
        for old in existing.get(str(item["item_key"]), []):
            if old["_id"] not in fresh:
                actions.append({"_op_type": "delete", "_index": index, "_id": old["_id"]})
    written, deleted = _bulk(es, actions, report)
    report.processed += len(todo)
    report.chunks_written += written
    report.chunks_deleted += deleted


def _load_items(es: Elasticsearch, site: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The item documents of ``keys`` (``core.store.get_items``: a real-time ``mget``, not
    a search, since the store's last bulk may not be refreshed yet when the step starts
    right after the drain)."""
    return get_items(es, keys, site=site)


def _existing_chunks(
    es: Elasticsearch, index: str, keys: Sequence[str]
) -> dict[str, list[dict[str, Any]]]:
    """Stored chunks of ``keys``: ``_id``, position, n_chunks, source_hash per chunk."""
    fields = ["item_key", "position", "n_chunks", "source_hash"]
    query = {"terms": {"item_key": list(keys)}}
    response = es.search(
        index=index, query=query, source_includes=fields, size=10_000, track_total_hits=True
    )
    hits: Iterable[dict[str, Any]] = response["hits"]["hits"]
    if response["hits"]["total"]["value"] > len(response["hits"]["hits"]):
        # Items with thousands of chunks: page through all of them.
        hits = scan(es, index=index, query={"query": query, "_source": fields}, size=1000)
    chunks: dict[str, list[dict[str, Any]]] = {}
    for hit in hits:
        source = hit["_source"]
        chunks.setdefault(source["item_key"], []).append({"_id": hit["_id"], **source})
    return chunks


def _up_to_date(chunks: Sequence[Mapping[str, Any]], source_hash: str) -> bool:
    if not chunks:
        return False
    n = chunks[0].get("n_chunks")
    return all(
        c.get("source_hash") == source_hash and c.get("n_chunks") == n for c in chunks
    ) and sorted(int(c.get("position", -1)) for c in chunks) == list(range(n or 0))


def _fingerprint(chunker: Chunker, embedder: Embedder) -> str:
    return f"{chunker.signature}|{embedder.name}|{embedder.dims}"


def _source_hash(doc: Mapping[str, Any], fingerprint: str) -> str:
    # The stored content hash covers the item's content; the fingerprint covers how it
    # was turned into vectors. Either changing means the chunks must be redone.
    basis = f"{doc.get('content_hash')}|{fingerprint}"
    return hashlib.blake2b(basis.encode(), digest_size=16).hexdigest()


def _index_action(
    index: str,
    chunk: Chunk,
    vector: list[float],
    doc: Mapping[str, Any],
    source_hash: str,
    embedder: Embedder,
    now: str,
) -> dict[str, Any]:
    return {
        "_op_type": "index",
        "_index": index,
        "_id": chunk.chunk_id,
        "_source": {
            "chunk_id": chunk.chunk_id,
            "item_key": chunk.item_key,
            "item_id": chunk.item_id,
            "site": chunk.site,
            "item_type": chunk.item_type,
            "url": chunk.url,
            "job_id": chunk.job_id,
            "position": chunk.position,
            "n_chunks": chunk.n_chunks,
            "title": chunk.title,
            "text": chunk.text,
            "source_hash": source_hash,
            "content_hash": doc.get("content_hash"),
            "embedder": embedder.name,
            "item_last_changed": doc.get("last_changed"),
            "indexed_at": now,
            "vector": vector,
        },
    }


def _bulk(
    es: Elasticsearch, actions: list[dict[str, Any]], report: ProcessReport
) -> tuple[int, int]:
    """Send ``actions`` in bulk requests; returns (indexed, deleted). Failures -> report."""
    written = deleted = 0
    for ok, info in streaming_bulk(
        es,
        actions,
        chunk_size=BULK_CHUNK_SIZE,
        max_chunk_bytes=20 * 1024 * 1024,
        raise_on_error=False,
        # The helper retries 429 (queue full) itself, with backoff.
        max_retries=3,
        initial_backoff=0.5,
    ):
        ((op, result),) = info.items()
        if op == "delete" and (ok or result.get("status") == 404):
            deleted += ok  # already gone: fine, it was surplus anyway
        elif ok:
            written += 1
        else:
            report.failed_writes += 1
            if len(report.errors) < MAX_ERRORS_KEPT:
                error = result.get("error")
                reason = error.get("reason") if isinstance(error, dict) else error
                report.errors.append(f"{op} {result.get('_id')}: {result.get('status')} {reason}")
    return written, deleted
