"""``ItemStore`` against a real Elasticsearch node and a real Redis: bulk writes,
idempotent re-sends, the flush window, per-item retries, dead letters, close.

Outages are real too: an "Elasticsearch down" store talks to a loopback port nothing
listens on (connection refused, as when the node is stopped).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import redis
import redis.asyncio
from elasticsearch import AsyncElasticsearch, Elasticsearch

from core.items_schema import plain_fields, schema_by_type
from core.store import (
    DeadLettered,
    IndexLayout,
    ItemStore,
    Outcome,
    RedisSpill,
    dead_letters,
    ensure_item_index,
    epoch_ms,
    spill_size,
)
from crawlers.items import DemoProduct, Product
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from tests.core.store.support import (
    BASE,
    FAST,
    action_for,
    dead_es,
    docs,
    run,
    store_settings,
)


def test_bulk_writes_each_item_once_with_layout_and_timestamps(
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    site: str,
    products: list[DemoProduct],
) -> None:
    batch = products[:120]
    actions = [action_for(site, p, seen=5000, first=1000, changed=3000) for p in batch]

    async def body(aes: AsyncElasticsearch, server: redis.asyncio.Redis) -> list[Outcome]:
        async with ItemStore(aes, RedisSpill(server, site), settings=FAST) as store:
            return await asyncio.gather(*(store.put(a) for a in actions))

    assert set(run(es_node, redis_server, body)) == {Outcome.INDEXED}
    stored = docs(es, site)
    assert len(stored) == 120
    doc = stored[f"{site}:demo_product:{batch[0].sku}"]
    assert {k: doc[k] for k in plain_fields(batch[0]) if k != "job_id"} == {
        k: v for k, v in plain_fields(batch[0]).items() if k != "job_id"
    }
    assert (epoch_ms(doc["first_seen"]), epoch_ms(doc["last_changed"])) == (1000, 3000)
    assert epoch_ms(doc["last_seen"]) == 5000
    assert doc["job_id"] == "j1" and doc["item_type"] == "demo_product" and doc["site"] == site
    # Layout: concrete index behind a write alias and the site's read alias.
    aliases = es.indices.get_alias(index=IndexLayout.index(site, "demo_product"))
    assert aliases[IndexLayout.index(site, "demo_product")]["aliases"] == {
        IndexLayout.write_alias(site, "demo_product"): {"is_write_index": True},
        IndexLayout.read_alias(site): {"is_write_index": False},
    }
    mapping = es.indices.get_mapping(index=IndexLayout.index(site, "demo_product"))
    properties = mapping[IndexLayout.index(site, "demo_product")]["mappings"]
    assert properties["dynamic"] == "strict"
    assert properties["properties"]["reviews"]["type"] == "nested"


def test_resending_is_idempotent_and_a_stale_write_never_wins(
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    site: str,
    products: list[DemoProduct],
) -> None:
    item = products[0]
    newer = action_for(site, item, seen=9000, first=1000, job="j2")
    older = action_for(site, item, seen=5000, first=1000, job="j1")

    async def body(aes: AsyncElasticsearch, server: redis.asyncio.Redis) -> list[Outcome]:
        async with ItemStore(aes, RedisSpill(server, site), settings=FAST) as store:
            first = await store.put(newer)
            again = await store.put(newer)  # a retry / replay of the same write
            stale = await store.put(older)  # e.g. a spilled write replayed late
            return [first, again, stale]

    assert run(es_node, redis_server, body) == [
        Outcome.INDEXED,
        Outcome.INDEXED,
        Outcome.SUPERSEDED,
    ]
    stored = docs(es, site)
    assert len(stored) == 1
    assert next(iter(stored.values()))["job_id"] == "j2"


def test_flush_on_size_and_on_time_window(
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    site: str,
    products: list[DemoProduct],
) -> None:
    settings = store_settings(bulk_size=50, flush_interval=2.0)

    async def body(aes: AsyncElasticsearch, server: redis.asyncio.Redis) -> tuple[Any, ...]:
        properties = schema_by_type("demo_product").es_properties
        await ensure_item_index(aes, site, "demo_product", properties)
        async with ItemStore(aes, RedisSpill(server, site), settings=settings) as store:
            started = time.monotonic()
            await asyncio.gather(
                *(store.put(action_for(site, p, seen=1, first=1)) for p in products[1:51])
            )
            by_size = time.monotonic() - started
            started = time.monotonic()
            await store.put(action_for(site, products[60], seen=1, first=1))
            by_window = time.monotonic() - started
            return by_size, by_window, store.counts["store/bulk_requests"]

    by_size, by_window, requests = run(es_node, redis_server, body)
    assert by_size < 1.5  # a full bulk goes at once, well before the window
    assert 1.9 <= by_window < 4.0  # a lone item waits for the window
    assert requests == 2


def test_partial_bulk_failure_is_retried_per_item_with_the_error_recorded(
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    site: str,
    products: list[DemoProduct],
) -> None:
    demo = [action_for(site, p, seen=2000, first=1000) for p in products[:20]]
    bags = [
        action_for(
            site, Product(url=f"{BASE}/bag/{n}", product_id=f"B{n}", name="Bag"), seen=2, first=1
        )
        for n in range(20)
    ]
    settings = store_settings(flush_interval=0.1, retry_backoff=0.2, spill_after=60.0)

    async def body(aes: AsyncElasticsearch, client: redis.asyncio.Redis) -> tuple[Any, ...]:
        store = ItemStore(aes, RedisSpill(client, site), settings=settings)
        await store.start()
        await asyncio.gather(store.put(demo[0]), store.put(bags[0]))  # declare both indices
        product_index = IndexLayout.index(site, "product")
        await aes.indices.put_settings(index=product_index, settings={"index.blocks.write": True})
        pending = asyncio.gather(*(store.put(a) for a in demo[1:] + bags[1:]))
        await asyncio.sleep(1.5)
        errors = {a.error for a in bags[1:]}
        demo_done = await aes.count(index=IndexLayout.index(site, "demo_product"))
        await aes.indices.put_settings(index=product_index, settings={"index.blocks.write": False})
        outcomes = await pending
        await store.close()
        return outcomes, errors, store.counts, demo_done

    outcomes, errors, counts, _ = run(es_node, redis_server, body)
    assert set(outcomes) == {Outcome.INDEXED}
    assert counts["store/retried"] >= 19
    assert counts["store/errors/cluster_block_exception"] >= 19
    assert all(error and "cluster_block_exception" in error for error in errors), errors
    assert len(docs(es, site)) == 40


def test_permanent_rejections_go_to_dead_letters_not_silently_away(
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    server: redis.Redis,
    site: str,
    products: list[DemoProduct],
) -> None:
    good = action_for(site, products[0], seen=2, first=1)
    bad_type = action_for(site, products[1], seen=2, first=1)
    bad_type.document["price"] = "twelve euros"  # bypassing validation: a mapping error
    unknown = action_for(site, products[2], seen=2, first=1)
    unknown.document["colour"] = "red"  # not in the (strict) mapping

    async def body(aes: AsyncElasticsearch, client: redis.asyncio.Redis) -> list[Any]:
        async with ItemStore(aes, RedisSpill(client, site), settings=FAST) as store:
            return await asyncio.gather(
                *(store.put(a) for a in (good, bad_type, unknown)), return_exceptions=True
            )

    outcomes = run(es_node, redis_server, body)
    assert outcomes[0] == Outcome.INDEXED
    assert isinstance(outcomes[1], DeadLettered) and isinstance(outcomes[2], DeadLettered)
    letters = dead_letters(server, site)
    assert {letter["action"]["key"] for letter in letters} == {bad_type.key, unknown.key}
    errors = " ".join(letter["error"] for letter in letters)
    assert "strict_dynamic_mapping_exception" in errors
    assert "parsing_exception" in errors
    assert len(docs(es, site)) == 1


def test_close_spills_what_elasticsearch_did_not_take(
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    server: redis.Redis,
    site: str,
    products: list[DemoProduct],
) -> None:
    actions = [action_for(site, p, seen=2, first=1) for p in products[:25]]
    settings = store_settings(flush_interval=0.1, spill_after=60.0, retry_backoff=0.1)

    async def body(_: AsyncElasticsearch, client: redis.asyncio.Redis) -> tuple[Any, ...]:
        down = dead_es()
        store = ItemStore(down, RedisSpill(client, site), settings=settings)
        await store.start()
        pending = asyncio.gather(*(store.put(a) for a in actions))
        await asyncio.sleep(0.5)  # they are being retried in memory
        report = await store.close(timeout=1.0)
        outcomes = await pending
        await down.close()
        return outcomes, report

    outcomes, report = run(es_node, redis_server, body)
    assert set(outcomes) == {Outcome.SPILLED}
    assert report.spill_remaining == 25 and report.unsaved == 0
    assert spill_size(server, site) == 25
