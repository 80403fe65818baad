"""Touches (an item seen unchanged without its content) and other indices' actions through
``ItemStore``, against a real Elasticsearch node and a real Redis; ``DocumentState.seen``
(local mode)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

import redis
import redis.asyncio
from elasticsearch import AsyncElasticsearch, Elasticsearch

from core.store import (
    DocumentState,
    ItemStore,
    Outcome,
    RedisSpill,
    StoreAction,
    build_touch,
    epoch_ms,
    spill_size,
)
from core.store.actions import INDEX
from crawlers.items import DemoProduct
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from tests.core.store.support import FAST, action_for, dead_es, docs, run


def touch(site: str, item: DemoProduct, seen: int, job: str) -> StoreAction:
    return build_touch(
        site=site,
        item_type="demo_product",
        key=f"{site}:demo_product:{item.sku}",
        job_id=job,
        seen_ms=seen,
    )


class Ledger:
    """Records what the store reports as stored (``JobLedger.stored``'s place)."""

    def __init__(self) -> None:
        self.stored: list[tuple[str, str]] = []

    async def __call__(self, entries: Iterable[tuple[str, str]]) -> None:
        self.stored += list(entries)


def test_a_touch_moves_last_seen_and_job_forward_only_and_never_creates(
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    site: str,
    products: list[DemoProduct],
) -> None:
    a, b, gone = products[:3]
    ledger = Ledger()

    async def body(aes: AsyncElasticsearch, client: redis.asyncio.Redis) -> list[Outcome]:
        async with ItemStore(
            aes, RedisSpill(client, site), settings=FAST, on_stored=ledger
        ) as store:
            for item in (a, b):
                await store.put(action_for(site, item, seen=5000, first=1000, changed=3000))
            before = docs(es, site)
            outcomes = [await store.put(touch(site, a, 6000, "j2"))]
            outcomes.append(await store.put(touch(site, a, 6000, "j2")))  # replay: noop
            outcomes.append(await store.put(touch(site, a, 5500, "j-old")))  # stale: noop
            outcomes.append(await store.put(touch(site, b, 4000, "j-old")))  # older than write
            outcomes.append(await store.put(touch(site, gone, 6000, "j2")))
            after = docs(es, site)
            assert set(after) == set(before)  # nothing created
            return outcomes

    outcomes = run(es_node, redis_server, body)
    assert outcomes == [
        Outcome.TOUCHED,
        Outcome.SUPERSEDED,
        Outcome.SUPERSEDED,
        Outcome.SUPERSEDED,
        Outcome.MISSING,
    ]
    stored = docs(es, site)
    doc_a = stored[f"{site}:demo_product:{a.sku}"]
    written = action_for(site, a, seen=5000, first=1000, changed=3000).document
    # Only last_seen and job_id moved.
    assert {k: v for k, v in doc_a.items() if k not in ("last_seen", "job_id")} == {
        k: v for k, v in written.items() if k not in ("last_seen", "job_id")
    }
    assert (epoch_ms(doc_a["last_seen"]), doc_a["job_id"]) == (6000, "j2")
    doc_b = stored[f"{site}:demo_product:{b.sku}"]
    assert (epoch_ms(doc_b["last_seen"]), doc_b["job_id"]) == (5000, "j1")
    # Touched and superseded count as stored in the job's ledger; a missing one not.
    assert Counter(ledger.stored)[("j2", f"{site}:demo_product:{a.sku}")] == 2
    assert ("j2", f"{site}:demo_product:{gone.sku}") not in ledger.stored


def test_a_touch_and_the_full_write_of_one_document_in_one_batch(
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    site: str,
    products: list[DemoProduct],
) -> None:
    newer, older = products[:2]

    async def body(aes: AsyncElasticsearch, client: redis.asyncio.Redis) -> list[Outcome]:
        async with ItemStore(aes, RedisSpill(client, site), settings=FAST) as store:
            for item in (newer, older):
                await store.put(action_for(site, item, seen=1000, first=1000))
            # The same flush window: a full write (changed content) and a touch of each.
            return list(
                await asyncio.gather(
                    store.put(touch(site, newer, 3000, "j2")),
                    store.put(action_for(site, newer, seen=2000, first=1000, job="j2")),
                    store.put(touch(site, older, 2000, "j2")),
                    store.put(action_for(site, older, seen=3000, first=1000, job="j2")),
                )
            )

    outcomes = run(es_node, redis_server, body)
    assert outcomes == [Outcome.TOUCHED, Outcome.INDEXED, Outcome.SUPERSEDED, Outcome.INDEXED]
    stored = docs(es, site)
    # The full write is never lost to a touch; the later last_seen stays.
    assert epoch_ms(stored[f"{site}:demo_product:{newer.sku}"]["last_seen"]) == 3000
    assert epoch_ms(stored[f"{site}:demo_product:{older.sku}"]["last_seen"]) == 3000


def test_elasticsearch_down_spills_touches_and_the_drain_applies_them_once(
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    server: redis.Redis,
    site: str,
    products: list[DemoProduct],
) -> None:
    items = products[:5]
    settings = FAST.__class__(**{**FAST.__dict__, "spill_after": 0.2})

    async def body(aes: AsyncElasticsearch, client: redis.asyncio.Redis) -> tuple[Any, ...]:
        async with ItemStore(aes, RedisSpill(client, site), settings=FAST) as store:
            for item in items:
                await store.put(action_for(site, item, seen=1000, first=1000))
        down = dead_es()
        async with ItemStore(down, RedisSpill(client, site), settings=settings) as store:
            spilled = await asyncio.gather(*(store.put(touch(site, i, 2000, "j2")) for i in items))
        await down.close()
        # A replayed entry (the same touch spilled twice) and an entry written before
        # touches existed (no ``op``: an index write).
        raw = await client.lrange(RedisSpill(client, site).keys.store_spill, 0, 0)
        legacy = json.loads(action_for(site, products[9], seen=1500, first=1500).to_json())
        del legacy["op"]
        await client.rpush(RedisSpill(client, site).keys.store_spill, raw[0], json.dumps(legacy))
        async with ItemStore(aes, RedisSpill(client, site), settings=FAST) as store:
            drained = await store.drain_spill()
            return spilled, drained, dict(store.counts), legacy

    spilled, drained, counts, legacy = run(es_node, redis_server, body)
    assert set(spilled) == {Outcome.SPILLED}
    assert drained == 7 and spill_size(server, site) == 0
    stored = docs(es, site)
    for item in items:
        doc = stored[f"{site}:demo_product:{item.sku}"]
        assert (epoch_ms(doc["last_seen"]), doc["job_id"]) == (2000, "j2")
    assert epoch_ms(stored[f"{site}:demo_product:{products[9].sku}"]["last_seen"]) == 1500
    assert counts["store/touched"] == 5 and counts["store/superseded"] == 1
    assert StoreAction.from_json(json.dumps(legacy)).op == INDEX


def test_actions_of_another_index_are_plain_writes_without_item_declaration(
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    site: str,
    products: list[DemoProduct],
) -> None:
    index = f"changes-{site}"
    prepared: list[str] = []

    async def prepare(client: AsyncElasticsearch, name: str) -> None:
        prepared.append(name)
        await client.options(ignore_status=400).indices.create(
            index=name, mappings={"properties": {"field": {"type": "keyword"}}}
        )

    change = StoreAction(
        key=f"{site}:demo_product:{products[0].sku}",
        site=site,
        item_type="demo_product",
        doc_id=f"{site}:demo_product:{products[0].sku}:j2:price",
        index=index,
        version=2000,
        document={"job_id": "j2", "field": "price", "old": 1.0, "new": 2.0},
    )
    ledger = Ledger()

    async def body(aes: AsyncElasticsearch, client: redis.asyncio.Redis) -> list[Outcome]:
        async with ItemStore(
            aes,
            RedisSpill(client, site),
            settings=FAST,
            on_stored=ledger,
            preparers={"changes-": prepare},
        ) as store:
            first = await store.put(change)
            again = await store.put(change)  # a replay: the same document again
            stale = StoreAction(**{**change.__dict__, "version": 1000})
            return [first, again, await store.put(stale)]

    try:
        outcomes = run(es_node, redis_server, body)
        # external_gte like an item write: an equal version writes the same document
        # again, an older one is refused.
        assert outcomes == [Outcome.INDEXED, Outcome.INDEXED, Outcome.SUPERSEDED]
        assert prepared == [index]  # once per process
        es.indices.refresh(index=index)
        assert es.get(index=index, id=change.doc_id)["_source"]["new"] == 2.0
        # No item index declared for it, and it is not an item of the job's ledger.
        assert not es.indices.exists_alias(name=f"items-{site}-demo_product")
        assert ledger.stored == []
    finally:
        es.indices.delete(index=index, ignore_unavailable=True)


def test_document_state_seen_in_local_mode(
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    site: str,
    products: list[DemoProduct],
) -> None:
    stored, fresh = products[:2]
    counts: Counter[str] = Counter()

    def count(name: str, n: int) -> None:
        counts[name] += n

    async def body(aes: AsyncElasticsearch, _: redis.asyncio.Redis) -> list[Any]:
        async with ItemStore(aes, None, settings=FAST) as store:
            await store.put(action_for(site, stored, seen=5000, first=1000, changed=3000))
        key, fresh_key = (f"{site}:demo_product:{p.sku}" for p in (stored, fresh))
        state = DocumentState(aes, on_count=count)
        seen = await state.seen("j2", key, seen_ms=6000)
        again = await state.seen("j2", key, seen_ms=6100)  # re-delivered: counted once
        unknown = await state.seen("j2", fresh_key, seen_ms=6000)
        new = await state.classify("j2", fresh_key, "h", seen_ms=6200)
        after_new = await state.seen("j2", fresh_key, seen_ms=6300)  # keeps "new"
        # Its document gone: the unchanged is taken back (once); a "new" never is.
        unseen = [await state.unsee("j2", key), await state.unsee("j2", key)]
        unseen.append(await state.unsee("j2", fresh_key))
        return [seen, again, unknown, new, after_new, unseen]

    seen, again, unknown, new, after_new, unseen = run(es_node, redis_server, body)
    assert unseen == [True, False, False]
    assert seen is not None and again is not None and unknown is None
    assert (seen.verdict, seen.first_seen_ms, seen.last_changed_ms, seen.seen_ms) == (
        "unchanged",
        1000,
        3000,
        6000,
    )
    assert seen.content_hash == docs(es, site)[seen.key]["content_hash"]
    assert new.verdict == "new" and after_new.verdict == "new"
    assert counts == Counter({"items/unchanged": 0, "items/new": 1})
