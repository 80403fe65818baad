"""Hybrid search over the chunks indices: BM25 and kNN, fused client-side with RRF.

Each query is two searches of ``chunks-<site>`` (or every site's chunks index), sent in
one ``_msearch`` request:

* **BM25**: ``multi_match`` on the chunk text and the item title (title boosted);
* **kNN**: the query embedded with the index's own embedder, HNSW over ``vector``.

Each list of chunks is collapsed to items (an item ranks where its best chunk ranks),
then the two item rankings are fused with reciprocal rank fusion:
``score(item) = sum over lists of 1 / (rank_constant + rank)``. Elasticsearch's own
``rrf`` retriever needs a paid licence (x-pack), so fusion happens here. The top ``k``
items are returned with their fields from ``items-<site>`` and each list's rank and
score, so a caller can see why an item ranked where it did. Items marked removed
(``removed_at``) are left out unless asked for (``include_removed``).

A query costs its embedding and two round trips (the lists, then the top items' fields
from the site's items). The embedder recorded on a site's chunks index, which every query
checks, is read once per ``metadata_ttl`` seconds (a site deleted meanwhile is found at
once: its search fails and the site is looked up again).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from elastic_transport import ApiResponseMeta
from elasticsearch import ApiError, Elasticsearch, NotFoundError
from elasticsearch.exceptions import HTTP_EXCEPTIONS

from core.store import doc_id_for, get_items, items_index
from core.store.changes import changes_alias
from indexing.embedders import Embedder
from indexing.index import CHUNKS_PREFIX, chunks_index, index_embedder, index_embedders

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
    # Where ``took_ms`` went: ``embed`` (the query's vector), ``lists`` (the BM25/kNN
    # request), ``items`` (the top items' fields), ms each.
    timings_ms: dict[str, float] = field(default_factory=dict)

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
        metadata_ttl: float = 30.0,
    ) -> None:
        self.es = es
        self.embedder = embedder
        self.rank_constant = rank_constant
        self.window = window  # chunks fetched per list (several per item collapse into one)
        self.num_candidates = num_candidates
        self.metadata_ttl = metadata_ttl
        # chunks index -> (monotonic expiry, its recorded embedder): see the module docstring.
        self._recorded: dict[str, tuple[float, tuple[str, int]]] = {}

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
        ``core.recrawl.removals``) are left out unless ``include_removed``."""
        started = time.perf_counter()
        query = query.strip()
        if not query:
            raise SearchError("empty query")
        if mode not in MODES:
            raise SearchError(f"mode must be one of {', '.join(MODES)}")
        index = self._index_for(site, needs_vectors=mode != "bm25")
        window = max(self.window, 4 * k)
        timings: dict[str, float] = {}
        vector = None
        if mode != "bm25":
            assert self.embedder is not None  # checked by _index_for
            embed_started = time.perf_counter()
            vector = self.embedder.embed([query])[0]
            timings["embed"] = _ms_since(embed_started)
        lists_started = time.perf_counter()
        bm25, knn = self._lists(site, index, query if mode != "knn" else None, vector, window)
        timings["lists"] = _ms_since(lists_started)
        bm25_items = _collapse(bm25)
        knn_items = _collapse(knn)
        fused = rrf([list(bm25_items), list(knn_items)], self.rank_constant)
        order = sorted(fused, key=lambda key: (-fused[key], key))
        items_started = time.perf_counter()
        ranked, items = self._present(order, k, site, include_removed=include_removed)
        timings["items"] = _ms_since(items_started)
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
            took_ms=_ms_since(started),
            hits=hits,
            timings_ms=timings,
        )

    # -- the two lists -----------------------------------------------------------------------
    def _lists(
        self,
        site: str | None,
        index: str,
        query: str | None,
        vector: list[float] | None,
        window: int,
    ) -> tuple[list[_ChunkHit], list[_ChunkHit]]:
        """The BM25 list of ``query`` and the kNN list of ``vector`` (each when given), in
        one round trip."""
        searches: list[dict[str, Any]] = []
        if query is not None:
            searches += [{"index": index}, self._bm25_body(query, window)]
        if vector is not None:
            searches += [{"index": index}, self._knn_body(vector, window)]
        result = self.es.msearch(searches=searches)
        responses = result["responses"]
        for response in responses:
            if "error" in response:
                self._fail(site, response, result.meta)
        lists = [_chunk_hits(response) for response in responses]
        bm25 = lists.pop(0) if query is not None else []
        knn = lists.pop(0) if vector is not None else []
        return bm25, knn

    @staticmethod
    def _bm25_body(query: str, window: int) -> dict[str, Any]:
        return {
            "query": {
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
            "size": window,
            "_source": {"excludes": ["vector"]},
        }

    def _knn_body(self, vector: list[float], window: int) -> dict[str, Any]:
        return {
            "knn": {
                "field": "vector",
                "query_vector": vector,
                "k": window,
                "num_candidates": max(self.num_candidates, window),
            },
            "size": window,
            "_source": {"excludes": ["vector"]},
        }

    def _fail(self, site: str | None, response: dict[str, Any], meta: ApiResponseMeta) -> None:
        """One of the lists failed: a site whose index is gone is unknown (looked up again
        next time), anything else is raised as the client raises Elasticsearch's errors."""
        error = response["error"]
        kind = error.get("type", "") if isinstance(error, dict) else str(error)
        if site is not None:
            self._recorded.pop(chunks_index(site), None)
        if kind == "index_not_found_exception":
            raise UnknownSite(f"no chunks index for site {site!r}" if site else "no chunks index")
        status = int(response.get("status", 500))
        raise HTTP_EXCEPTIONS.get(status, ApiError)(
            message=kind, meta=replace(meta, status=status), body={"error": error}
        )

    # -- indices and items -------------------------------------------------------------------
    def _index_for(self, site: str | None, *, needs_vectors: bool) -> str:
        """The chunks index (or comma-joined indices) to query, checked for the embedder."""
        recorded: Mapping[str, tuple[str, int] | None]
        if site is not None:
            indices = [chunks_index(site)]
            recorded = {indices[0]: self._recorded_embedder(indices[0])}
            if recorded[indices[0]] is None:
                raise UnknownSite(f"no chunks index for site {site!r} ({indices[0]})")
        else:
            # Every site: read afresh (one request), so a new site is searched at once.
            recorded = index_embedders(self.es, f"{CHUNKS_PREFIX}*")
            indices = sorted(recorded)
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

    def _recorded_embedder(self, index: str) -> tuple[str, int] | None:
        """The embedder recorded on ``index``, read at most once per ``metadata_ttl``."""
        now = time.monotonic()
        cached = self._recorded.get(index)
        if cached is not None and cached[0] > now:
            return cached[1]
        recorded = index_embedder(self.es, index)
        if recorded is not None:
            self._recorded[index] = (now + self.metadata_ttl, recorded)
        return recorded

    def _present(
        self, order: Sequence[str], k: int, site: str | None, *, include_removed: bool
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
            found = self._items(batch, site)
            for key in batch:
                item = found.get(key, {})
                if item.get("removed_at") and not include_removed:
                    continue
                ranked.append(key)
                items[key] = item
        return ranked, items

    def _items(self, keys: Sequence[str], site: str | None) -> dict[str, dict[str, Any]]:
        """The item documents of ``keys`` (current fields: name, price, URL...), from the
        site's items when the search was one site's (not every site's shards)."""
        if not keys:
            return {}
        response = self.es.search(
            index=items_index(site),
            query={"ids": {"values": [doc_id_for(key) for key in keys]}},
            size=len(keys),
            ignore_unavailable=True,
            allow_no_indices=True,
        )
        docs = (hit["_source"] for hit in response["hits"]["hits"])
        return {str(doc.get("item_key")): doc for doc in docs if doc.get("item_key") in keys}


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


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
    """The change documents of the item ``key`` (``core.recrawl.history``), newest first (per
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
