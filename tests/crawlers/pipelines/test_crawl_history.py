"""Real crawls of the demo site: a revision's price and stock changes land in
``changes-demo`` with their exact old and new values, and the job's summary counts them.

Two ``scrapy crawl demo`` workers crawl revision 0, then revision 1 (5% of products
changed: prices, descriptions, some out of stock) with a new job. The change documents go
through the store (``store_extra``), so the second crawl's documents are read back from
Elasticsearch.
"""

from __future__ import annotations

from pathlib import Path

from elasticsearch import Elasticsearch

from core.recrawl.history import job_change_counts, notable_text
from core.store.changes import changes_alias
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from standins.demo_site.catalog import build_catalog
from tests.crawlers.pipelines.support import key_of, module_site, reset_store
from tests.crawlers.pipelines.test_crawl_store import crawl

PRODUCTS = 240


site = module_site("history-site", PRODUCTS)


def reset(es: Elasticsearch, redis_server: RedisServer) -> None:
    reset_store(es, redis_server.client())
    es.indices.delete(index="changes-demo*", ignore_unavailable=True, allow_no_indices=True)


def test_a_revision_records_exact_old_and_new_values(
    site: DemoSite,
    redis_server: RedisServer,
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    tmp_path: Path,
) -> None:
    catalog = build_catalog(n_products=PRODUCTS)
    revised = catalog.revised(1)
    server = redis_server.client()
    site.reset()
    reset(es, redis_server)
    try:
        first = crawl(site, server, redis_server.url, es, es_node.url, tmp_path)
        assert job_change_counts(es, "demo", first.job_id) == {}  # all new: nothing changed
        site.control(revision=1)
        try:
            second = crawl(site, server, redis_server.url, es, es_node.url, tmp_path)
        finally:
            site.control(revision=0)

        expected = {}
        for sku in revised.changed_skus:
            old, new = catalog.by_sku[sku], revised.by_sku[sku]
            key = key_of(sku)
            if new.price != old.price:
                kind = "price_drop" if new.price < old.price else "price_rise"
                expected[f"{key}:{second.job_id}:price"] = ("price", old.price, new.price, kind)
            if new.availability != old.availability:
                kind = "out_of_stock" if new.availability == "OutOfStock" else "back_in_stock"
                expected[f"{key}:{second.job_id}:availability"] = (
                    "availability",
                    old.availability,
                    new.availability,
                    kind,
                )
        assert expected  # revision 1 moves prices and stock

        es.indices.refresh(index=changes_alias("demo"))
        hits = es.search(index=changes_alias("demo"), size=1000)["hits"]["hits"]
        found = {hit["_id"]: hit["_source"] for hit in hits}
        assert set(found) == set(expected)
        for doc_id, (field, old_value, new_value, kind) in expected.items():
            doc = found[doc_id]
            key = doc_id.split(f":{second.job_id}:")[0]
            assert (doc["item_key"], doc["job_id"], doc["field"], doc["kind"]) == (
                key,
                second.job_id,
                field,
                kind,
            )
            if field == "price":
                assert (doc["old_number"], doc["new_number"]) == (old_value, new_value)
            else:
                assert (doc["old"], doc["new"]) == (old_value, new_value)
            # The change's time is when the second crawl saw the new content.
            assert doc["time"] == second.docs[key]["last_changed"]

        counts = job_change_counts(es, "demo", second.job_id)
        kinds = [kind for *_, kind in expected.values()]
        assert counts == {kind: kinds.count(kind) for kind in set(kinds)}
        assert notable_text(counts).startswith(f"{kinds.count('price_drop')} price drop")
    finally:
        reset(es, redis_server)
