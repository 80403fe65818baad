"""Search quality on the demo catalog with the offline model: recall@5 of hand-written,
paraphrased queries, for BM25 alone, kNN alone and the hybrid (RRF) search."""

from __future__ import annotations

import re

from search.core import MODES, HybridSearch
from tests.indexing.support import RecordingEmbedder
from tests.search.conftest import SearchableDemo
from tests.search.queries import QUERIES

K = 5
MIN_HYBRID_RECALL = 0.90


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def test_queries_are_paraphrases_not_copies(searchable_demo: SearchableDemo) -> None:
    catalog = searchable_demo.catalog
    assert len(QUERIES) >= 30
    for sku, query in QUERIES.items():
        description = " ".join(words(catalog.by_sku[sku].description))
        query_words = words(query)
        runs = [" ".join(query_words[i : i + 4]) for i in range(len(query_words) - 3)]
        copied = [run for run in runs if f" {run} " in f" {description} "]
        assert not copied, f"{sku}: {query!r} copies {copied} from its description"


def test_recall_at_5(searchable_demo: SearchableDemo, local_embedder: RecordingEmbedder) -> None:
    searcher = HybridSearch(searchable_demo.es, local_embedder)
    site = searchable_demo.site
    recall: dict[str, float] = {}
    misses: dict[str, list[str]] = {}
    for mode in MODES:
        found = 0
        for sku, query in QUERIES.items():
            hits = searcher.search(query, site=site, k=K, mode=mode).hits
            if f"{site}:demo_product:{sku}" in [hit.item_key for hit in hits]:
                found += 1
            else:
                misses.setdefault(mode, []).append(sku)
        recall[mode] = found / len(QUERIES)
    report = ", ".join(f"{mode} {recall[mode]:.3f}" for mode in ("bm25", "knn", "hybrid"))
    print(f"\nrecall@{K} over {len(QUERIES)} queries, 1200 products: {report}; misses {misses}")
    assert recall["hybrid"] >= MIN_HYBRID_RECALL, misses
