"""``DocumentState``: dedup's verdicts from the stored documents (local mode, no Redis).

The state is what the store wrote last time; the store writes exactly what the state
decided. A real Elasticsearch node, no Redis.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
import redis.asyncio
from elasticsearch import AsyncElasticsearch, Elasticsearch

from core.dedup.detector import ItemState
from core.items_schema import plain_fields, schema_by_type
from core.store import DocumentState, ItemStore, build_action, epoch_ms
from crawlers.items import DemoProduct
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from tests.core.store.support import FAST, dead_es, docs, run


def write(site: str, item: DemoProduct, state: ItemState, job: str) -> object:
    fields = plain_fields(item)
    return build_action(
        site=site,
        item_type="demo_product",
        key=state.key,
        fields=fields,
        content_hash=state.content_hash,
        job_id=job,
        seen_ms=state.seen_ms,
        first_seen_ms=state.first_seen_ms,
        last_changed_ms=state.last_changed_ms,
    )


def test_verdicts_and_timestamps_come_from_the_stored_document(
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    site: str,
    products: list[DemoProduct],
) -> None:
    item = products[0]
    changed = DemoProduct(**{**plain_fields(item), "price": item.price + 1})  # type: ignore[operator]
    schema = schema_by_type("demo_product")
    counts: Counter[str] = Counter()

    async def body(aes: AsyncElasticsearch, _: redis.asyncio.Redis) -> list[str]:
        verdicts = []
        async with ItemStore(aes, None, settings=FAST) as store:
            # Every crawl is a new process: no decision is remembered between them.
            for job, seen, version in (
                ("j1", 1000, item),
                ("j2", 2000, item),
                ("j3", 3000, changed),
                ("j4", 4000, changed),
            ):
                state = DocumentState(aes, on_count=lambda name, n: counts.update({name: n}))
                fields = plain_fields(version)
                result = await state.classify(
                    job, schema.key(site, fields), schema.content_hash(fields), seen_ms=seen
                )
                verdicts.append(result.verdict)
                await store.put(write(site, version, result, job))  # type: ignore[arg-type]
        return verdicts

    verdicts = run(es_node, redis_server, body)
    assert verdicts == ["new", "unchanged", "changed", "unchanged"]
    doc = next(iter(docs(es, site).values()))
    assert (epoch_ms(doc["first_seen"]), epoch_ms(doc["last_changed"])) == (1000, 3000)
    assert epoch_ms(doc["last_seen"]) == 4000
    assert (counts["items/new"], counts["items/unchanged"], counts["items/changed"]) == (1, 2, 1)


def test_an_item_seen_twice_before_its_write_is_decided_once_per_job(
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    site: str,
    products: list[DemoProduct],
) -> None:
    schema = schema_by_type("demo_product")
    fields = plain_fields(products[1])
    key, digest = schema.key(site, fields), schema.content_hash(fields)
    counts: Counter[str] = Counter()

    async def body(aes: AsyncElasticsearch, _: redis.asyncio.Redis) -> list[ItemState]:
        state = DocumentState(aes, on_count=lambda name, n: counts.update({name: n}))
        # Nothing stored yet (not even the index): a re-delivery within the job stays
        # new, and a later job sees the first sighting even before the store wrote it.
        first = await asyncio.gather(*(state.classify("j1", key, digest, seen_ms=10) for _ in "ab"))
        later = await state.classify("j2", key, digest, seen_ms=20)
        return [*first, later]

    a, b, later = run(es_node, redis_server, body)
    assert (a.verdict, b.verdict, later.verdict) == ("new", "new", "unchanged")
    assert (later.first_seen_ms, later.last_changed_ms) == (10, 10)
    assert +counts == Counter({"items/new": 1, "items/unchanged": 1})


def test_an_unreachable_node_is_a_transient_error(
    es_node: ElasticsearchNode, redis_server: RedisServer, site: str
) -> None:
    async def body(_: AsyncElasticsearch, __: redis.asyncio.Redis) -> None:
        down = dead_es()
        state = DocumentState(down)
        try:
            with pytest.raises(DocumentState.transient_errors):
                await state.classify("j1", f"{site}:demo_product:X", "h", seen_ms=1)
        finally:
            await down.close()

    run(es_node, redis_server, body)
