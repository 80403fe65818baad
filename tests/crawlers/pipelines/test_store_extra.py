"""Extra store actions: what another component leaves for an item in
``ItemContext.store_extra`` (change documents of ``changes-<site>``) goes
through the store before the item, durable when the item is."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from elasticsearch import Elasticsearch

from core.store import INDEX_PREPARERS, IndexLayout, StoreAction
from crawlers.items import DemoProduct
from crawlers.pipelines.dedup import DedupPipeline
from crawlers.pipelines.store import StorePipeline
from crawlers.runtime.item_context import item_context
from crawlers.runtime.services import CrawlServices
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from standins.demo_site.catalog import build_catalog
from tests.crawlers.pipelines.test_pipelines import BASE, crawler_for

CHANGES = "changes-demo"


@pytest.fixture
def services(
    redis_server: RedisServer, es_node: ElasticsearchNode, es: Elasticsearch
) -> Iterator[dict[str, Any]]:
    def reset() -> None:
        redis_server.client().flushdb()
        for pattern in ("items-demo-*", CHANGES):
            es.indices.delete(index=pattern, ignore_unavailable=True, allow_no_indices=True)

    reset()
    yield {"REDIS_URL": redis_server.url, "ELASTICSEARCH_URL": es_node.url}
    reset()


def test_extra_actions_are_stored_before_the_item_and_not_counted_as_items(
    services: dict[str, Any], es: Elasticsearch, redis_server: RedisServer
) -> None:
    crawler = crawler_for(**services)
    dedup = DedupPipeline.from_crawler(crawler)
    store = StorePipeline.from_crawler(crawler)
    item = DemoProduct(**build_catalog(n_products=1).products[0].to_dict(BASE))
    key = f"demo:demo_product:{item.sku}"
    change = StoreAction(
        key=key,
        site="demo",
        item_type="demo_product",
        doc_id=f"{key}:job-1:price",
        index=CHANGES,
        version=1,
        document={"item_key": key, "job_id": "job-1", "field": "price", "old": 1.0, "new": 2.0},
    )
    order: list[str] = []
    passing: list[Any] = []

    async def prepare(client: Any, index: str) -> None:
        order.append(f"prepare {index}")

    async def main() -> None:
        await dedup.open_spider()
        await store.open_spider()
        assert store.store is not None
        put = store.store.put

        async def recorded(action: StoreAction) -> Any:
            outcome = await put(action)
            order.append(f"{action.index} {outcome}")
            return outcome

        store.store.put = recorded  # type: ignore[method-assign]
        try:
            passed = await dedup.process_item(item)
            item_context(passed).store_extra.append(change)
            passing.append(passed)
            await store.process_item(passed)
        finally:
            await store.close_spider()
            await CrawlServices.of(crawler).aclose()

    registered = INDEX_PREPARERS.get("changes-")
    INDEX_PREPARERS["changes-"] = prepare
    try:
        asyncio.run(main())
    finally:
        if registered is None:
            del INDEX_PREPARERS["changes-"]
        else:
            INDEX_PREPARERS["changes-"] = registered
    assert order == [
        f"prepare {CHANGES}",
        f"{CHANGES} indexed",
        f"{IndexLayout.write_alias('demo', 'demo_product')} indexed",
    ]
    es.indices.refresh(index=CHANGES)
    assert es.get(index=CHANGES, id=change.doc_id)["_source"]["new"] == 2.0
    # Only the item is in the job's ledger of stored items.
    assert redis_server.client().smembers("{demo}:job:job-1:stored") == {key.encode()}
    # Taken by the store: a retry of the item would not write them twice.
    assert [item_context(one).store_extra for one in passing] == [[]]
