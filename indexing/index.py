"""The chunks index of a site: ``chunks-<site>``.

One document per chunk, ``_id`` = the chunk id (``<item doc id>:<position>``), holding the
chunk's text and title (BM25, with the analyzer of the site's language, ``core.languages``:
a match query analyses the query with the same analyzer), its
vector (``dense_vector``, cosine, HNSW) and the metadata to filter, group and replace by
(site, item key, item type, URL, job id, position, n_chunks, source hash).

The index's ``_meta`` records the embedder and vector size it was built with. Vectors of
two embedders are not comparable (not even two backends serving the "same" model), so
writing or querying with another embedder is refused with ``EmbedderMismatch``; to
switch backends, delete the index and run the LLM step over the whole site
(``python -m indexing backfill --site <site>``).
"""

from __future__ import annotations

from typing import Any

from elasticsearch import BadRequestError, Elasticsearch, NotFoundError

from core.languages import STANDARD, text_analyzer
from core.store.layout import cluster_replicas_sync
from indexing.embedders import Embedder

CHUNKS_PREFIX = "chunks-"
MAPPING_VERSION = 2  # 2: the text analyzer follows the site language

KEYWORD = {"type": "keyword", "ignore_above": 1024}
DATE = {"type": "date", "format": "strict_date_optional_time||epoch_millis"}


class EmbedderMismatch(RuntimeError):
    """The chunks index holds vectors of another embedder (or another vector size)."""


def chunks_index(site: str) -> str:
    return f"{CHUNKS_PREFIX}{site}"


def chunks_mapping(dims: int, analyzer: str = STANDARD) -> dict[str, Any]:
    """``dims`` from the embedder; ``analyzer`` for the text and title (the site's language)."""
    return {
        "dynamic": "strict",
        "properties": {
            "chunk_id": KEYWORD,
            "item_key": KEYWORD,
            "item_id": KEYWORD,
            "site": KEYWORD,
            "item_type": KEYWORD,
            "url": {"type": "keyword", "ignore_above": 4096},
            "job_id": KEYWORD,
            "position": {"type": "integer"},
            "n_chunks": {"type": "integer"},
            "title": {
                "type": "text",
                "analyzer": analyzer,
                "fields": {"keyword": {"type": "keyword", "ignore_above": 256}},
            },
            "text": {"type": "text", "analyzer": analyzer},
            # The item's content hash + chunker + embedder: equal -> nothing to redo.
            "source_hash": KEYWORD,
            "content_hash": KEYWORD,
            "embedder": KEYWORD,
            "item_last_changed": DATE,
            "indexed_at": DATE,
            "vector": {
                "type": "dense_vector",
                "dims": dims,
                "index": True,
                "similarity": "cosine",
                # Full-precision HNSW: ES 9 would otherwise quantise (bbq) at 384+ dims.
                "index_options": {"type": "hnsw", "m": 16, "ef_construction": 100},
            },
        },
    }


def index_embedder(es: Elasticsearch, index: str) -> tuple[str, int] | None:
    """``(embedder name, dims)`` recorded on an existing chunks index; None if absent."""
    try:
        response = es.indices.get_mapping(index=index)
    except NotFoundError:
        return None
    for recorded in _recorded(response.body).values():
        if recorded is not None:
            return recorded
    return None


def index_embedders(es: Elasticsearch, pattern: str) -> dict[str, tuple[str, int] | None]:
    """Each index matching ``pattern`` -> its recorded ``(embedder name, dims)`` (None if
    it has none), in one request; {} when none matches."""
    response = es.indices.get_mapping(index=pattern, allow_no_indices=True)
    return _recorded(response.body)


def _recorded(mappings: dict[str, Any]) -> dict[str, tuple[str, int] | None]:
    found: dict[str, tuple[str, int] | None] = {}
    for name, body in mappings.items():
        meta = body.get("mappings", {}).get("_meta", {})
        found[name] = (str(meta["embedder"]), int(meta["dims"])) if "embedder" in meta else None
    return found


def check_embedder(index: str, recorded: tuple[str, int], embedder: Embedder) -> None:
    name, dims = recorded
    if name != embedder.name:
        raise EmbedderMismatch(
            f"{index} holds vectors of {name} ({dims} dims) but this process embeds with "
            f"{embedder.name}: vectors of different embedders cannot share an index. Use the "
            f"same backend, or delete {index} and re-run the LLM step over the site "
            "(python -m indexing backfill --site ...)"
        )
    if dims != embedder.dims:
        raise EmbedderMismatch(
            f"{index} holds {dims}-dim vectors but {embedder.name} returns {embedder.dims}"
        )


def ensure_chunks_index(
    es: Elasticsearch,
    site: str,
    embedder: Embedder,
    *,
    language: str | None = None,
    replicas: int | None = None,
) -> str:
    """Create ``chunks-<site>`` for ``embedder`` if absent, else check it matches; idempotent.

    ``language`` (the site's, ``core.languages``) picks the text analyzer when the index is
    created; an existing index keeps its own (changing it means re-creating the index).

    ``replicas`` None: one when the cluster has two or more data nodes, else none (as the
    item indices, ``core.store.layout``).
    """
    index = chunks_index(site)
    recorded = index_embedder(es, index)
    if recorded is None:
        analyzer = text_analyzer(language)
        mapping = chunks_mapping(embedder.dims, analyzer)
        mapping["_meta"] = {
            "embedder": embedder.name,
            "dims": embedder.dims,
            "language": language or "",
            "analyzer": analyzer,
            "mapping_version": MAPPING_VERSION,
            "managed_by": "indexing.index",
        }
        try:
            es.indices.create(
                index=index,
                settings={
                    "number_of_shards": 1,
                    "number_of_replicas": cluster_replicas_sync(es, replicas),
                    "refresh_interval": "1s",
                },
                mappings=mapping,
            )
            return index
        except BadRequestError as exc:
            if exc.error != "resource_already_exists_exception":
                raise
            # Another process created it meanwhile: check theirs like any existing index.
            recorded = index_embedder(es, index)
            if recorded is None:
                raise EmbedderMismatch(f"{index} exists without embedder metadata") from exc
    check_embedder(index, recorded, embedder)
    return index
