"""The store and Elasticsearch's security: a 401 is an outage (items spill, reported once,
stored by the next store with the right credentials); a 403 is permanent (dead letter,
no retries). The security answers come from ``harness.es_auth_gate`` in front of the
real node."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio
from elasticsearch import AsyncElasticsearch, Elasticsearch

from core.store import DeadLettered, FileSpill, ItemStore, Outcome
from core.store.changes import change_action
from crawlers.items import DemoProduct
from harness.es_auth_gate import EsAuthGate
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from tests.core.store.support import FAST, action_for, docs, run

USER, PASSWORD = "platform_writer", "right-secret"


@pytest.fixture(scope="module")
def gate(es_node: ElasticsearchNode, run_dir: Path) -> Iterator[EsAuthGate]:
    with EsAuthGate(
        es_node.url, user=USER, password=PASSWORD, deny_index=["changes-"], run_dir=run_dir
    ) as server:
        yield server


def client(gate: EsAuthGate, password: str) -> AsyncElasticsearch:
    return AsyncElasticsearch(
        gate.url, basic_auth=(USER, password), request_timeout=10, max_retries=0
    )


def test_refused_credentials_spill_and_the_right_ones_store_everything(
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    gate: EsAuthGate,
    site: str,
    products: list[DemoProduct],
    tmp_path: Path,
) -> None:
    actions = [action_for(site, p, seen=2, first=1) for p in products[:30]]
    path = tmp_path / f"{site}.jsonl"
    refusals: list[int] = []

    async def body(_: AsyncElasticsearch, __: redis.asyncio.Redis) -> tuple[Any, ...]:
        wrong = client(gate, "wrong-secret")
        store = ItemStore(
            wrong,
            FileSpill(path),
            settings=FAST,
            on_auth=lambda exc: refusals.append(exc.meta.status),
        )
        async with store:
            outcomes = await asyncio.gather(*(store.put(a) for a in actions))
            healthy = store.healthy
        await wrong.close()
        right = client(gate, PASSWORD)
        drained = await ItemStore(right, FileSpill(path), settings=FAST).drain_spill()
        await right.close()
        return outcomes, healthy, drained, store.counts

    outcomes, healthy, drained, counts = run(es_node, redis_server, body)
    assert set(outcomes) == {Outcome.SPILLED} and not healthy
    assert counts.get("store/dead_letter", 0) == 0  # nothing lost to a wrong password
    assert set(refusals) == {401}
    assert drained == 30
    assert len(docs(es, site)) == 30


def test_a_forbidden_index_is_dead_lettered_at_once_not_retried(
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    gate: EsAuthGate,
    site: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    actions = [
        change_action(
            site=site,
            item_type="demo_product",
            key=f"{site}:p{n}",
            job_id="j1",
            seen_ms=1000,
            field="price",
            old=1,
            new=2,
            kind="price",
        )
        for n in range(3)
    ]
    spill = FileSpill(tmp_path / f"{site}.jsonl")
    refusals: list[int] = []

    async def body(_: AsyncElasticsearch, __: redis.asyncio.Redis) -> tuple[Any, ...]:
        es = client(gate, PASSWORD)
        store = ItemStore(
            es,
            spill,
            settings=FAST,
            preparers={},
            on_auth=lambda exc: refusals.append(exc.meta.status),
        )
        async with store:
            outcomes = await asyncio.gather(
                *(store.put(a) for a in actions), return_exceptions=True
            )
        await es.close()
        return outcomes, store.counts, await spill.dead_size()

    with caplog.at_level(logging.ERROR, logger="core.store.writer"):
        outcomes, counts, dead = run(es_node, redis_server, body)
    assert all(isinstance(outcome, DeadLettered) for outcome in outcomes)
    error = str(outcomes[0])
    assert "403" in error and "lacks a privilege" in error and f"changes-{site}" in error
    assert counts.get("store/retried", 0) == 0
    assert counts["store/dead_letter"] == 3 and dead == 3
    assert set(refusals) == {403}  # reported to the caller, which logs it once
    # The alert: one ERROR line for the index, not one per write.
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(lines) == 1 and lines[0].startswith(
        f"Elasticsearch refused writes to changes-{site}"
    )
