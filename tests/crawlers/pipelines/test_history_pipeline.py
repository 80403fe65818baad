"""The history pipeline in-process, on a real Redis and Elasticsearch node: the change
documents a revision of the demo catalog gives, handed to the store as ``store_extra``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from elasticsearch import AsyncElasticsearch, Elasticsearch
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from core.store import ItemStore, StoreAction
from core.store.changes import changes_alias
from crawlers.items import DemoProduct
from crawlers.pipelines.dedup import DedupPipeline
from crawlers.pipelines.history import HistoryPipeline
from crawlers.pipelines.validate import ValidationPipeline
from crawlers.runtime.item_context import DedupNote, find_context
from crawlers.runtime.services import CrawlServices
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from standins.demo_site.catalog import Product, build_catalog
from tests.core.store.support import FAST
from tests.crawlers.pipelines.test_pipelines import BASE, NO_SERVICES, crawler_for

PRODUCTS = 240


@pytest.fixture
def services(
    redis_server: RedisServer, es_node: ElasticsearchNode, es: Elasticsearch
) -> Iterator[dict[str, Any]]:
    def reset() -> None:
        redis_server.client().flushdb()
        es.indices.delete(index="changes-demo*", ignore_unavailable=True, allow_no_indices=True)

    reset()
    yield {"REDIS_URL": redis_server.url, "ELASTICSEARCH_URL": es_node.url}
    reset()


def item_of(product: Product, job_id: str) -> DemoProduct:
    return DemoProduct(**product.to_dict(BASE), job_id=job_id)


def expected_changes(old: Product, new: Product) -> list[tuple[str, Any, Any, str]]:
    """``(field, old, new, kind)`` the revision made of ``old``, worked out here."""
    changes = []
    if new.price != old.price:
        changes.append(
            ("price", old.price, new.price, "price_drop" if new.price < old.price else "price_rise")
        )
    if new.availability != old.availability:
        kind = "out_of_stock" if new.availability == "OutOfStock" else "back_in_stock"
        changes.append(("availability", old.availability, new.availability, kind))
    return changes


def run_job(crawler: Crawler, items: list[DemoProduct]) -> dict[str, list[StoreAction]]:
    """validate -> dedup -> history for ``items``; the store_extra note of each (by sku),
    after checking that dedup's note is left for the store."""
    validate = ValidationPipeline.from_crawler(crawler)
    dedup = DedupPipeline.from_crawler(crawler)
    history = HistoryPipeline.from_crawler(crawler)

    async def main() -> dict[str, list[StoreAction]]:
        await dedup.open_spider()
        await history.open_spider()
        try:
            # Validation hands on a normalised copy: the context is the copy's.
            passed = []
            for item in items:
                valid = await validate.process_item(item)
                passed.append(await history.process_item(await dedup.process_item(valid)))
            out = {}
            for item in passed:
                context = find_context(item)
                assert context is not None
                assert isinstance(context.verdict, DedupNote)  # still there for the store
                actions = context.store_extra
                if actions:
                    out[item.sku] = actions
            return out
        finally:
            await CrawlServices.of(crawler).aclose()

    return asyncio.run(main())


def test_off_without_redis_or_elasticsearch(es_node: ElasticsearchNode) -> None:
    with pytest.raises(NotConfigured) as off:  # bare: local mode says nothing above DEBUG
        HistoryPipeline.from_crawler(crawler_for(**NO_SERVICES))
    assert off.value.args == ()
    with pytest.raises(NotConfigured):
        HistoryPipeline.from_crawler(crawler_for(REDIS_URL=None, ELASTICSEARCH_URL=es_node.url))


def test_a_revision_gives_exact_change_documents_the_same_on_redelivery(
    services: dict[str, Any], es: Elasticsearch, es_node: ElasticsearchNode
) -> None:
    catalog = build_catalog(n_products=PRODUCTS)
    revised = catalog.revised(1)
    skus = sorted(revised.changed_skus)
    crawler = crawler_for(**services)
    # The first crawl: every item new, nothing known before, no change documents.
    assert run_job(crawler, [item_of(catalog.by_sku[sku], "job-1") for sku in skus]) == {}
    assert es.indices.exists_alias(name=changes_alias("demo"))

    second = run_job(crawler, [item_of(revised.by_sku[sku], "job-2") for sku in skus])
    expected = {
        sku: changes
        for sku in skus
        if (changes := expected_changes(catalog.by_sku[sku], revised.by_sku[sku]))
    }
    kinds = {kind for changes in expected.values() for *_, kind in changes}
    assert {"price_drop", "price_rise", "out_of_stock"} <= kinds  # the revision has each
    assert set(second) == set(expected)
    for sku, actions in second.items():
        key = f"demo:demo_product:{sku}"
        assert [(a.doc_id, a.index, a.key) for a in actions] == [
            (f"{key}:job-2:{field}", "changes-demo", key) for field, *_ in expected[sku]
        ]
        for action, (field, old, new, kind) in zip(actions, expected[sku], strict=True):
            document = action.document
            assert (document["field"], document["kind"], document["job_id"]) == (
                field,
                kind,
                "job-2",
            )
            if field == "price":
                assert (document["old_number"], document["new_number"]) == (old, new)
                assert (document["old"], document["new"]) == (str(old), str(new))
            else:
                assert (document["old"], document["new"]) == (old, new)
                assert "old_number" not in document

    # Delivered again within job-2 (a worker killed before its ack): the same documents.
    again = run_job(crawler, [item_of(revised.by_sku[sku], "job-2") for sku in skus])
    assert {sku: [a.document for a in actions] for sku, actions in again.items()} == {
        sku: [a.document for a in actions] for sku, actions in second.items()
    }
    stats = crawler.stats.get_stats()  # type: ignore[union-attr]
    total = sum(len(changes) for changes in expected.values())
    assert stats["history/changes"] == 2 * total

    # The actions are what the store writes: through an ItemStore into changes-demo.
    async def store(actions: list[StoreAction]) -> None:
        client = AsyncElasticsearch(es_node.url)
        try:
            async with ItemStore(client, None, settings=FAST) as item_store:
                await asyncio.gather(*(item_store.put(action) for action in actions))
        finally:
            await client.close()

    asyncio.run(store([a for actions in [*second.values(), *again.values()] for a in actions]))
    es.indices.refresh(index=changes_alias("demo"))
    hits = es.search(index=changes_alias("demo"), size=1000)["hits"]["hits"]
    assert len(hits) == total  # one document per (item, job, field): re-delivery rewrote them
    assert {hit["_id"]: hit["_source"] for hit in hits} == {
        a.doc_id: a.document for actions in second.values() for a in actions
    }
