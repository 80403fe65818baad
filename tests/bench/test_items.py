"""``bench.items``: the embedding and multilingual benchmarks store their products the one
way, as the store pipeline writes them (one document per product, found by its key)."""

from __future__ import annotations

from elasticsearch import Elasticsearch

from bench import embedding, multilingual
from bench.multilingual_catalog import PRODUCTS
from harness.es_node import ElasticsearchNode


def test_both_benchmarks_store_their_products_as_the_store_does(es_node: ElasticsearchNode) -> None:
    es = Elasticsearch(es_node.url)
    try:
        keys = embedding.store_items(es_node.url, es, 5)
        assert len(keys) == len(set(keys)) == 5
        assert es.count(index="items-bench")["count"] == 5
        site = multilingual.site_name("probe", "fr")
        keys = multilingual.store_catalogue(es_node.url, es, site, "fr")
        assert len(keys) == len(PRODUCTS)
        stored = es.mget(index=f"items-{site}", ids=keys[:1])["docs"][0]
        sku = next(iter(PRODUCTS))
        assert stored["found"] and stored["_source"]["name"] == PRODUCTS[sku]["fr"][0]
        assert stored["_source"]["job_id"] == "bench-job"
    finally:
        es.indices.delete(index="items-bench*,items-mlprobe*", ignore_unavailable=True)
        es.close()
