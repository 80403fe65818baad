"""Items marked removed (``core.recrawl.removals``) are left out of searches unless asked for,
even while their chunks are still indexed (a chunk delete still pending)."""

from __future__ import annotations

import uuid

from elasticsearch import Elasticsearch

from core.store import doc_id_for, index_for_key
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from indexing.index import chunks_index
from indexing.process import process_job
from search.core import HybridSearch
from standins.demo_site.catalog import build_catalog
from tests.indexing.support import RecordingEmbedder, product_item, store_job


def test_removed_items_are_excluded_by_default(
    es_node: ElasticsearchNode, redis_server: RedisServer, local_embedder: RecordingEmbedder
) -> None:
    site = f"srm{uuid.uuid4().hex[:8]}"
    es = Elasticsearch(es_node.url, request_timeout=120)
    products = build_catalog(n_products=6).products
    try:
        store_job(
            es_node.url, redis_server.url, site, "j1", [product_item(p, "j1") for p in products]
        )
        process_job(es, redis_server.client(), site, "j1", local_embedder)
        searcher = HybridSearch(es, local_embedder)
        target = products[0]
        (key,) = [hit.item_key for hit in searcher.search(target.name, site=site, k=6).hits
                  if hit.item_key.endswith(target.sku)]  # fmt: skip
        es.update(
            index=index_for_key(key),
            id=doc_id_for(key),
            doc={"removed_at": "2026-01-01T00:00:00.000Z"},
            refresh=True,
        )
        for mode in ("hybrid", "bm25"):
            shown = searcher.search(target.name, site=site, k=6, mode=mode)
            assert key not in [hit.item_key for hit in shown.hits], mode
            if mode == "hybrid":  # kNN ranks every item: the others still fill the page
                assert len(shown.hits) == 5
            everything = searcher.search(target.name, site=site, k=6, mode=mode,
                                         include_removed=True)  # fmt: skip
            (hit,) = [hit for hit in everything.hits if hit.item_key == key]
            assert hit.item["removed_at"] == "2026-01-01T00:00:00.000Z"
    finally:
        es.indices.delete(index=f"items-{site}-*,{chunks_index(site)}", ignore_unavailable=True)
        es.close()
