"""The one read path of stored items (``core.store.read``), against a real node and Redis."""

from __future__ import annotations

import redis
import redis.asyncio
from elasticsearch import AsyncElasticsearch, Elasticsearch

from core.dedup.detector import ChangeDetector
from core.items_schema import plain_fields, schema_by_type
from core.store import ItemStore, RedisSpill, get_items, items_index, job_items
from crawlers.items import DemoProduct, Product
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from tests.core.store.support import BASE, FAST, action_for, run


def test_items_by_key_across_types_and_the_jobs_new_or_changed_items(
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    server: redis.Redis,
    site: str,
    products: list[DemoProduct],
) -> None:
    demo = [action_for(site, p, seen=2, first=1) for p in products[:3]]
    bag = action_for(
        site, Product(url=f"{BASE}/bag/1", product_id="B1", name="Bag"), seen=2, first=1
    )
    schema = schema_by_type("demo_product")

    async def body(aes: AsyncElasticsearch, client: redis.asyncio.Redis) -> None:
        async with ItemStore(aes, RedisSpill(client, site), settings=FAST) as store:
            for action in [*demo, bag]:
                await store.put(action)
        # Job j1 found products[0] new; products[1] was seen but is not new or changed.
        detector = ChangeDetector(client, site)
        await detector.classify("j0", demo[1].key, "h")
        await detector.classify("j1", demo[0].key, schema.content_hash(plain_fields(products[0])))
        await detector.classify("j1", demo[1].key, "h")

    run(es_node, redis_server, body)
    keys = [demo[0].key, bag.key, f"{site}:demo_product:missing", "not-a-key", demo[0].key]
    found = get_items(es, keys)  # real time: no refresh
    assert set(found) == {demo[0].key, bag.key}
    assert found[bag.key]["name"] == "Bag" and found[demo[0].key]["sku"] == products[0].sku
    assert get_items(es, keys, site="elsewhere") == {}
    assert set(job_items(es, server, site, "j1")) == {demo[0].key}
    assert items_index(site) == f"items-{site}" and items_index() == "items-*"
