"""``ItemStore`` when a write cannot be made durable, against a real Elasticsearch node
and Redis: a store that can neither write nor spill gives its items up after
``STORE_CLOSE_TIMEOUT`` (one ERROR line, never a hang), and an index whose mapping
conflicts with the schema is reported once with the fix, its writes never retried.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio
from elasticsearch import AsyncElasticsearch, Elasticsearch

from core.store import (
    DeadLettered,
    FileSpill,
    IndexLayout,
    ItemStore,
    RedisSpill,
    StoreUnavailable,
    dead_letters,
    ensure_item_index,
)
from crawlers.items import DemoProduct, schema_by_type
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from tests.core.store.support import action_for, dead_es, run, store_settings

WRITER = "core.store.writer"


def writer_lines(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == WRITER and r.levelno == level]


def test_refused_writes_and_an_unwritable_spill_are_given_up_at_the_close_timeout(
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    site: str,
    products: list[DemoProduct],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=WRITER)
    spill_file = tmp_path / f"{site}.jsonl"
    spill_file.mkdir()  # the spill's file cannot be written (a directory: even for root)
    actions = [action_for(site, p, seen=2, first=1) for p in products[:12]]
    settings = store_settings(
        flush_interval=0.1, spill_after=0.3, retry_backoff=0.1, retry_backoff_max=0.5,
        close_timeout=1.5,
    )  # fmt: skip
    failed: list[str] = []

    async def body(aes: AsyncElasticsearch, _: redis.asyncio.Redis) -> tuple[Any, ...]:
        schema = schema_by_type("demo_product")
        await ensure_item_index(aes, site, "demo_product", schema.es_properties, replicas=0)
        index = IndexLayout.index(site, "demo_product")
        await aes.indices.put_settings(index=index, settings={"index.blocks.write": True})
        store = ItemStore(aes, FileSpill(spill_file), settings=settings, on_failed=failed.append)
        await store.start()
        started = time.monotonic()
        outcomes = await asyncio.gather(*(store.put(a) for a in actions), return_exceptions=True)
        given_up_after = time.monotonic() - started
        report = await store.close()
        await aes.indices.put_settings(index=index, settings={"index.blocks.write": False})
        return outcomes, given_up_after, report, store.counts

    outcomes, given_up_after, report, counts = run(es_node, redis_server, body)
    assert all(isinstance(o, StoreUnavailable) for o in outcomes), outcomes
    # Overdue after spill_after, then STORE_CLOSE_TIMEOUT of patience (and a retry's wait).
    assert 1.5 <= given_up_after < 1.5 + 0.3 + 3.0
    assert counts["store/unsaved"] == report.unsaved == 12
    (line,) = failed
    assert writer_lines(caplog, logging.ERROR) == [line]
    assert line.startswith("store gave up on 12 items after STORE_CLOSE_TIMEOUT=1.5s")
    assert "cluster_block_exception" in line  # what Elasticsearch said
    assert f"the spill (file {spill_file}) cannot be written (IsADirectoryError" in line
    assert f"make {tmp_path} writable, or set STORE_SPILL_DIR" in line
    # The spill's failure is said once, not once per attempt.
    warnings = [w for w in writer_lines(caplog, logging.WARNING) if "spill unavailable" in w]
    assert len(warnings) == 1 and "at most STORE_CLOSE_TIMEOUT=1.5s" in warnings[0]


def test_without_a_spill_an_unreachable_store_gives_up_instead_of_waiting_forever(
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    site: str,
    products: list[DemoProduct],
) -> None:
    actions = [action_for(site, p, seen=2, first=1) for p in products[:5]]
    settings = store_settings(
        flush_interval=0.1, spill_after=0.2, retry_backoff=0.1, close_timeout=2.0
    )
    failed: list[str] = []

    async def timed(store: ItemStore, batch: list[Any]) -> tuple[list[Any], float]:
        started = time.monotonic()
        outcomes = await asyncio.wait_for(
            asyncio.gather(*(store.put(a) for a in batch), return_exceptions=True), 20
        )
        return outcomes, time.monotonic() - started

    async def body(_: AsyncElasticsearch, __: redis.asyncio.Redis) -> tuple[Any, ...]:
        down = dead_es()
        store = ItemStore(down, None, settings=settings, on_failed=failed.append)
        await store.start()
        first = await timed(store, actions[:4])
        # Once given up, an item failing the same way is given up at once.
        late = await timed(store, actions[4:])
        await store.close()
        await down.close()
        return first, late

    (outcomes, first_after), (late, late_after) = run(es_node, redis_server, body)
    assert all(isinstance(o, StoreUnavailable) for o in outcomes + late), outcomes + late
    assert first_after >= 2.0 > late_after
    (line,) = failed
    assert "there is no spill" in line and "ConnectionError" in line


def test_a_conflicting_mapping_is_reported_once_with_the_fix_and_never_retried(
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    server: redis.Redis,
    site: str,
    products: list[DemoProduct],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=WRITER)
    index = IndexLayout.index(site, "demo_product")
    # An index of an older schema: price a keyword where the schema has a double.
    es.indices.create(index=index, mappings={"properties": {"price": {"type": "keyword"}}})
    actions = [action_for(site, p, seen=2, first=1) for p in products[:20]]
    settings = store_settings(flush_interval=0.1, retry_backoff=0.05, spill_after=0.3)

    async def body(aes: AsyncElasticsearch, client: redis.asyncio.Redis) -> tuple[Any, ...]:
        async with ItemStore(aes, RedisSpill(client, site), settings=settings) as store:
            first = await asyncio.gather(
                *(store.put(a) for a in actions[:10]), return_exceptions=True
            )
            # A later batch is refused at once too: the index is not declared again.
            later = await asyncio.gather(
                *(store.put(a) for a in actions[10:]), return_exceptions=True
            )
        return first + later, store.counts

    outcomes, counts = run(es_node, redis_server, body)
    assert all(isinstance(o, DeadLettered) for o in outcomes), outcomes
    assert [o.repeated for o in outcomes].count(False) == 1  # one drop said, the rest DEBUG
    assert counts["store/dead_letter"] == 20
    assert counts["store/errors/illegal_argument_exception"] == 1  # asked once
    assert "store/retried" not in counts and "store/spilled" not in counts
    (error,) = writer_lines(caplog, logging.ERROR)
    assert (
        f"index {index} has a conflicting mapping for field price (keyword there, double in "
        "the demo_product schema)"
    ) in error
    assert "not retried" in error and f"DELETE /{index}" in error
    assert IndexLayout.index(site, "demo_product", 2) in error
    assert len(dead_letters(server, site)) == 20
