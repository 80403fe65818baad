"""Hybrid search over the chunks indices: BM25 and kNN, fused client-side with RRF.

Each query runs twice against ``chunks-<site>`` (or every site's chunks index):

* **BM25**: ``multi_match`` on the chunk text and the item title (title boosted);
* **kNN**: the query embedded with the index's own embedder, HNSW over ``vector``.

Each list of chunks is collapsed to items (an item ranks where its best chunk ranks),
then the two item rankings are fused with reciprocal rank fusion:
``score(item) = sum over lists of 1 / (rank_constant + rank)``. Elasticsearch's own
``rrf`` retriever needs a paid licence (x-pack), so fusion happens here. The top ``k``
items are returned with their fields from ``items-<site>`` and each list's rank and
score, so a caller can see why an item ranked where it did. Items marked removed
(``removed_at``) are left out unless asked for (``include_removed``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from elasticsearch import Elasticsearch, NotFoundError

from core.store import doc_id_for, get_items, items_index
from core.store.changes import changes_alias
from indexing.embedders import Embedder
from indexing.index import CHUNKS_PREFIX, chunks_index, index_embedder

Mode = Literal["hybrid", "bm25", "knn"]
MODES: tuple[Mode, ...] = ("hybrid", "bm25", "knn")
RANK_CONSTANT = 60  # the usual RRF constant (Cormack et al.); ES uses the same default
# Item fields never returned: bookkeeping, and nested lists that would bloat a result list.
HIDDEN_FIELDS = frozenset({"content_hash", "job_id", "extracted_job_id", "reviews"})


class SearchError(RuntimeError):
    """A search that cannot run as asked (unknown site, embedder mismatch)."""


class UnknownSite(SearchError):
    """No chunks index for the site (or none at all)."""


class QueryEmbedderMismatch(SearchError):
    """The chunks were embedded by another embedder than the one embedding queries."""


@dataclass(frozen=True)
class ListScore:
    rank: int  # 1-based rank of the item in that list
    score: float  # Elasticsearch's score of the item's best chunk


@dataclass
class Hit:
    item_key: str
    site: str
    item_type: str
    name: str
    url: str | None
    score: float  # the fused (RRF) score; in single-list modes, 1 / (c + rank) as well
    bm25: ListScore | None
    knn: ListScore | None
    snippet: str  # the best-matching chunk's text
    item: dict[str, Any] = field(default_factory=dict)


@dataclass
class SearchResult:
    query: str
    site: str | None
    k: int
    mode: Mode
    embedder: str | None
    took_ms: float
    hits: list[Hit]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# Up to three words: all; more: three in ten (rounded down), Elasticsearch's syntax.
# Measured on the demo catalog: English recall@5 of BM25 0.94 -> 0.96 (48 queries), and a
# short query in another language no longer hits through "de" alone (tests/search).
BM25_MINIMUM_SHOULD_MATCH = "3<30%"


def rrf(rankings: Sequence[Sequence[str]], rank_constant: int = RANK_CONSTANT) -> dict[str, float]:
    """Reciprocal rank fusion of ranked id lists (best first): id -> fused score."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (rank_constant + rank)
    return scores


@dataclass
class _ChunkHit:
    item_key: str
    score: float
    source: dict[str, Any]


class HybridSearch:
    """Searches chunks indices; one instance is shared by the API's worker threads."""

    def __init__(
        self,
        es: Elasticsearch,
        embedder: Embedder | None,
        *,
        rank_constant: int = RANK_CONSTANT,
        window: int = 50,
        num_candidates: int = 200,
    ) -> None:
        self.es = es
        self.embedder = embedder
        self.rank_constant = rank_constant
        self.window = window  # chunks fetched per list (several per item collapse into one)
        self.num_candidates = num_candidates

    def search(
        self,
        query: str,
        *,
        site: str | None = None,
        k: int = 10,
        mode: Mode = "hybrid",
        include_removed: bool = False,
    ) -> SearchResult:
        """The top ``k`` items for ``query``. Items marked removed (``removed_at``, see
        ``core.removals``) are left out unless ``include_removed``."""
        started = time.perf_counter()
        query = query.strip()
        if not query:
            raise SearchError("empty query")
        if mode not in MODES:
            raise SearchError(f"mode must be one of {', '.join(MODES)}")
        index = self._index_for(site, needs_vectors=mode != "bm25")
        window = max(self.window, 4 * k)
        bm25 = self._bm25(index, query, window) if mode != "knn" else []
        knn = self._knn(index, query, window) if mode != "bm25" else []
        bm25_items = _collapse(bm25)
        knn_items = _collapse(knn)
        fused = rrf([list(bm25_items), list(knn_items)], self.rank_constant)
        order = sorted(fused, key=lambda key: (-fused[key], key))
        ranked, items = self._present(order, k, include_removed=include_removed)
        bm25_ranks = {key: i for i, key in enumerate(bm25_items, start=1)}
        knn_ranks = {key: i for i, key in enumerate(knn_items, start=1)}
        hits = []
        for key in ranked:
            # The snippet: the item's chunk from the list where the item ranks best.
            listed = [
                (ranks[key], chunks[key])
                for ranks, chunks in ((bm25_ranks, bm25_items), (knn_ranks, knn_items))
                if key in chunks
            ]
            source = min(listed, key=lambda entry: entry[0])[1].source
            item = items.get(key, {})
            hits.append(
                Hit(
                    item_key=key,
                    site=str(source.get("site", "")),
                    item_type=str(source.get("item_type", "")),
                    name=str(item.get("name") or item.get("title") or source.get("title", "")),
                    url=item.get("url") or source.get("url"),
                    score=round(fused[key], 6),
                    bm25=_list_score(bm25_items, bm25_ranks, key),
                    knn=_list_score(knn_items, knn_ranks, key),
                    snippet=str(source.get("text", "")),
                    item={k: v for k, v in item.items() if k not in HIDDEN_FIELDS},
                )
            )
        return SearchResult(
            query=query,
            site=site,
            k=k,
            mode=mode,
            embedder=self.embedder.name if self.embedder and mode != "bm25" else None,
            took_ms=round((time.perf_counter() - started) * 1000, 1),
            hits=hits,
        )

    # -- the two lists -----------------------------------------------------------------------
    def _bm25(self, index: str, query: str, window: int) -> list[_ChunkHit]:
        response = self.es.search(
            index=index,
            query={
                "multi_match": {
                    "query": query,
                    "fields": ["title^2", "text"],
                    "type": "best_fields",
                    "tie_breaker": 0.3,
                    # Enough of a query's words must match: a query in another language
                    # than the index shares only short words ("de") with it, which alone
                    # made a hit (kNN finds those products across languages).
                    "minimum_should_match": BM25_MINIMUM_SHOULD_MATCH,
                }
            },
            size=window,
            source_excludes=["vector"],
        )
        return _chunk_hits(response)

    def _knn(self, index: str, query: str, window: int) -> list[_ChunkHit]:
        assert self.embedder is not None  # checked by _index_for
        vector = self.embedder.embed([query])[0]
        response = self.es.search(
            index=index,
            knn={
                "field": "vector",
                "query_vector": vector,
                "k": window,
                "num_candidates": max(self.num_candidates, window),
            },
            size=window,
            source_excludes=["vector"],
        )
        return _chunk_hits(response)

    # -- indices and items -------------------------------------------------------------------
    def _index_for(self, site: str | None, *, needs_vectors: bool) -> str:
        """The chunks index (or comma-joined indices) to query, checked for the embedder."""
        if site is not None:
            indices = [chunks_index(site)]
            recorded = {indices[0]: index_embedder(self.es, indices[0])}
            if recorded[indices[0]] is None:
                raise UnknownSite(f"no chunks index for site {site!r} ({indices[0]})")
        else:
            names = self.es.indices.get(index=f"{CHUNKS_PREFIX}*", allow_no_indices=True)
            indices = sorted(names.body)
            recorded = {name: index_embedder(self.es, name) for name in indices}
            if not indices:
                raise UnknownSite("no chunks index exists yet")
        if needs_vectors:
            if self.embedder is None:
                raise SearchError("kNN needs an embedder; this service has none")
            mismatched = [
                f"{name} ({rec[0]})"
                for name, rec in recorded.items()
                if rec is not None and rec[0] != self.embedder.name
            ]
            if mismatched:
                raise QueryEmbedderMismatch(
                    f"query embedder {self.embedder.name} does not match "
                    f"{', '.join(mismatched)}: query vectors must come from the model that "
                    "embedded the chunks"
                )
        return ",".join(indices)

    def _present(
        self, order: Sequence[str], k: int, *, include_removed: bool
    ) -> tuple[list[str], dict[str, dict[str, Any]]]:
        """The first ``k`` keys of ``order`` whose item is not removed, with their items.
        A removed item's chunks are deleted with it, so this is one lookup of ``k`` items
        unless a deletion is still pending."""
        ranked: list[str] = []
        items: dict[str, dict[str, Any]] = {}
        start = 0
        while len(ranked) < k and start < len(order):
            batch = order[start : start + k - len(ranked)]
            start += len(batch)
            found = self._items(batch)
            for key in batch:
                item = found.get(key, {})
                if item.get("removed_at") and not include_removed:
                    continue
                ranked.append(key)
                items[key] = item
        return ranked, items

    def _items(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The item documents of ``keys`` (current fields: name, price, URL...)."""
        if not keys:
            return {}
        response = self.es.search(
            index=items_index(),
            query={"ids": {"values": [doc_id_for(key) for key in keys]}},
            size=len(keys),
            ignore_unavailable=True,
            allow_no_indices=True,
        )
        docs = (hit["_source"] for hit in response["hits"]["hits"])
        return {str(doc.get("item_key")): doc for doc in docs if doc.get("item_key") in keys}


def _chunk_hits(response: Any) -> list[_ChunkHit]:
    return [
        _ChunkHit(str(hit["_source"]["item_key"]), float(hit["_score"] or 0.0), hit["_source"])
        for hit in response["hits"]["hits"]
    ]


def _collapse(hits: Sequence[_ChunkHit]) -> dict[str, _ChunkHit]:
    """Chunks -> items, best first: an item ranks where its best chunk ranks."""
    best: dict[str, _ChunkHit] = {}
    for hit in hits:
        best.setdefault(hit.item_key, hit)
    return best


def _list_score(
    items: Mapping[str, _ChunkHit], ranks: Mapping[str, int], key: str
) -> ListScore | None:
    if key not in items:
        return None
    return ListScore(rank=ranks[key], score=round(items[key].score, 6))


# -- an item's change history (``GET /items/{key}/history``) ------------------------------


class UnknownItem(SearchError):
    """No stored item has the key."""


def item_history(es: Elasticsearch, key: str, *, limit: int = 100) -> list[dict[str, Any]]:
    """The change documents of the item ``key`` (``core.history``), newest first (per
    time, by field name); [] for a stored item that never changed, ``UnknownItem`` for a
    key no stored item has."""
    if not get_items(es, [key]):
        raise UnknownItem(f"no item {key!r}")
    site = key.split(":", 1)[0]
    try:
        response = es.search(
            index=changes_alias(site),
            query={"term": {"item_key": key}},
            sort=[{"time": "desc"}, {"field": "asc"}],
            size=limit,
        )
    except NotFoundError:
        return []  # the site never recorded a change
    return [hit["_source"] for hit in response["hits"]["hits"]]
