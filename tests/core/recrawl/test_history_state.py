"""The history values in a real Redis and a real Redis Cluster: exact old values, the same
for every delivery within a job, per-job keys with the job TTL."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import redis

from core.keys import SiteKeys
from core.recrawl.history import HistoryState, diff
from core.redis_client import connect, connect_async
from tests.core.redis_target import Target

FIELDS = ("price", "availability")


@pytest.fixture
def server(target: Target) -> Iterator[redis.Redis]:
    client = connect(target.url, cluster=target.cluster)
    yield client  # type: ignore[misc]
    client.close()


@pytest.fixture
def site() -> str:
    return f"site-{uuid.uuid4().hex[:8]}"  # fresh keys: no flush on the shared servers


def record(
    target: Target, site: str, entries: list[tuple[str, str, Mapping[str, Any]]]
) -> list[dict[str, Any] | None]:
    """Record ``(job, key, values)`` entries concurrently; the old values of each."""

    async def main() -> list[dict[str, Any] | None]:
        client = connect_async(target.url, cluster=target.cluster)
        state = HistoryState(client, site, job_ttl=600)
        try:
            return list(
                await asyncio.gather(
                    *(state.record(job, key, values) for job, key, values in entries)
                )
            )
        finally:
            await client.aclose()

    return asyncio.run(main())


def test_old_values_are_exact_and_the_same_for_a_redelivery(
    target: Target, server: redis.Redis, site: str
) -> None:
    first = {"price": 20.0, "availability": "InStock"}
    second = {"price": 18.99, "availability": "OutOfStock"}
    assert record(target, site, [("j1", "k", first)]) == [None]  # nothing known: no change
    old = record(target, site, [("j2", "k", second)])
    assert old == [first]
    # Delivered again in j2 (a worker killed before its ack): the same old values, the
    # same diff, even though the stored values are now j2's.
    assert record(target, site, [("j2", "k", second), ("j2", "k", second)]) == [first, first]
    assert diff(first, second, FIELDS) == diff(old[0], second, FIELDS)
    keys = SiteKeys(site)
    assert server.hget(keys.history_values, "k") == b'{"availability":"OutOfStock","price":18.99}'
    assert 0 < server.ttl(keys.job_history_old("j2")) <= 600
    assert server.ttl(keys.history_values) == -1  # the site's values do not expire
    # The next job diffs against j2's values.
    assert record(target, site, [("j3", "k", {"price": 17.5})]) == [second]


def test_a_new_key_redelivered_in_its_first_job_still_has_no_old_values(
    target: Target, site: str
) -> None:
    values = {"price": 5.0}
    assert record(target, site, [("j1", "n", values), ("j1", "n", {"price": 6.0})]) == [
        None,
        None,
    ]
