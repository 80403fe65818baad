"""The spills against a real Elasticsearch node and a real Redis: items spilled while
Elasticsearch is down are drained exactly once, by one drainer at a time; the file spill
when there is no Redis; old spill entries stay readable.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import redis
import redis.asyncio
from elasticsearch import AsyncElasticsearch, Elasticsearch

from core.config import REPO_ROOT
from core.keys import SiteKeys
from core.store import FileSpill, ItemStore, Outcome, RedisSpill, StoreAction, spill_size
from crawlers.items import DemoProduct
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from tests.core.store.support import FAST, action_for, dead_es, docs, run


def test_elasticsearch_down_items_spill_then_drain_exactly_once(
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    server: redis.Redis,
    site: str,
    products: list[DemoProduct],
) -> None:
    actions = [action_for(site, p, seen=2000, first=1000) for p in products[:300]]

    async def body(aes: AsyncElasticsearch, client: redis.asyncio.Redis) -> tuple[Any, ...]:
        down = dead_es()
        async with ItemStore(down, RedisSpill(client, site), settings=FAST) as store:
            outcomes = await asyncio.gather(*(store.put(a) for a in actions))
            healthy = store.healthy
        await down.close()
        spilled = spill_size(server, site)
        # Replaying writes already in the spill must not duplicate anything.
        await RedisSpill(client, site).push(actions[:50])
        live = ItemStore(aes, RedisSpill(client, site), settings=FAST)
        drained = await live.drain_spill()
        return outcomes, healthy, spilled, drained

    outcomes, healthy, spilled, drained = run(es_node, redis_server, body)
    assert set(outcomes) == {Outcome.SPILLED} and not healthy
    assert spilled == 300 and drained == 350
    assert spill_size(server, site) == 0
    assert len(docs(es, site)) == 300


def test_file_spill_when_there_is_no_redis(
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    site: str,
    products: list[DemoProduct],
    tmp_path: Path,
) -> None:
    actions = [action_for(site, p, seen=2, first=1) for p in products[:40]]
    path = tmp_path / f"{site}.jsonl"

    async def body(aes: AsyncElasticsearch, _: redis.asyncio.Redis) -> tuple[Any, ...]:
        down = dead_es()
        async with ItemStore(down, FileSpill(path), settings=FAST) as store:
            outcomes = await asyncio.gather(*(store.put(a) for a in actions))
        await down.close()
        spilled = len(path.read_text().splitlines())
        drained = await ItemStore(aes, FileSpill(path), settings=FAST).drain_spill()
        return outcomes, spilled, drained, await FileSpill(path).size()

    outcomes, spilled, drained, left = run(es_node, redis_server, body)
    assert set(outcomes) == {Outcome.SPILLED}
    assert (spilled, drained, left) == (40, 40, 0)
    assert len(docs(es, site)) == 40


def test_two_drainers_at_once_lose_nothing(
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    server: redis.Redis,
    site: str,
    products: list[DemoProduct],
) -> None:
    actions = [action_for(site, p, seen=2, first=1) for p in products]

    async def body(aes: AsyncElasticsearch, client: redis.asyncio.Redis) -> int:
        await RedisSpill(client, site).push(actions)
        stores = [ItemStore(aes, RedisSpill(client, site), settings=FAST) for _ in range(2)]

        async def drain_until_empty(store: ItemStore) -> int:
            total = 0
            while await RedisSpill(client, site).size():
                total += await store.drain_spill(max_batches=1)
                await asyncio.sleep(0)
            return total

        return sum(await asyncio.gather(*(drain_until_empty(s) for s in stores)))

    assert run(es_node, redis_server, body) == len(products)
    assert spill_size(server, site) == 0
    assert len(docs(es, site)) == len(products)
    assert not server.exists(SiteKeys(site).store_spill_lock)


def test_entries_of_an_older_release_stay_readable() -> None:
    # A spill outlives a release: an entry with a field this version dropped still loads.
    raw = (
        '{"key":"s:demo_product:A","site":"s","item_type":"demo_product",'
        '"doc_id":"s:demo_product:A","index":"items-s-demo_product","version":2,'
        '"document":{"sku":"A"},"needs_state":false,"attempts":3,"error":"x"}'
    )
    action = StoreAction.from_json(raw)
    assert (action.key, action.version, action.attempts) == ("s:demo_product:A", 2, 3)
    assert StoreAction.from_json(action.to_json()) == action


# A drainer that holds the lock and never finishes its send (as if stuck on a slow bulk),
# in its own process so the test can SIGKILL it mid-drain.
_STUCK_DRAINER = """
import asyncio, sys
import redis.asyncio
from core.store import RedisSpill

async def main():
    client = redis.asyncio.Redis.from_url(sys.argv[1])
    spill = RedisSpill(client, sys.argv[2], lock_timeout=float(sys.argv[3]))

    async def stuck(actions):
        print("draining", flush=True)
        await asyncio.sleep(3600)
        return []

    await spill.drain(stuck, batch=10)

asyncio.run(main())
"""


def test_a_killed_drainers_lock_is_taken_over_within_its_lease(
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    server: redis.Redis,
    site: str,
    products: list[DemoProduct],
) -> None:
    lease = 1.5
    actions = [action_for(site, p, seen=2, first=1) for p in products[:40]]

    async def push(aes: AsyncElasticsearch, client: redis.asyncio.Redis) -> None:
        await RedisSpill(client, site).push(actions)

    run(es_node, redis_server, push)
    drainer = subprocess.Popen(
        [sys.executable, "-c", _STUCK_DRAINER, redis_server.url, site, str(lease)],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    try:
        assert drainer.stdout is not None and drainer.stdout.readline() == b"draining\n"
        # Alive, it keeps renewing its lease well past the lease's length.
        time.sleep(3 * lease)
        holder = server.get(SiteKeys(site).store_spill_lock)
        assert holder is not None and holder.decode().startswith(f"{drainer.pid}:")
    finally:
        drainer.kill()
        drainer.wait()
    killed_at = time.monotonic()

    taken: list[float] = []  # when the first batch was drained

    async def take_over(aes: AsyncElasticsearch, client: redis.asyncio.Redis) -> int:
        store = ItemStore(aes, RedisSpill(client, site, lock_timeout=lease), settings=FAST)
        # Timed from the later of the lease's end and this store's first try: building the
        # clients on a loaded machine is not the lock's wait.
        ready = max(time.monotonic(), killed_at + lease)
        drained = 0
        while await RedisSpill(client, site).size():
            drained += await store.drain_spill()
            if drained and not taken:
                taken.append(time.monotonic() - ready)
            await asyncio.sleep(0.05)
        return drained

    assert run(es_node, redis_server, take_over) == len(actions)
    assert taken and taken[0] < lease + 1.0, taken
    assert len(docs(es, site)) == len(actions)
