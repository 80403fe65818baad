"""Change detection against a real Redis and a real Redis Cluster: verdicts, timestamps,
per-job keys, races."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator

import pytest
import redis

from core.dedup.detector import ChangeDetector, ItemState, Known, decide, job_changes, stored_state
from core.figures.stats import JobStats
from core.keys import SiteKeys
from core.redis_client import connect, connect_async
from tests.core.redis_target import Target


@pytest.fixture
def server(target: Target) -> Iterator[redis.Redis]:
    client = connect(target.url, cluster=target.cluster)
    yield client  # type: ignore[misc]
    if not target.cluster:  # the cluster's tests use fresh site names only
        client.flushdb()
    client.close()


@pytest.fixture
def site() -> str:
    return f"site-{uuid.uuid4().hex[:8]}"


def run_classify(
    target: Target, site: str, job: str, entries: list[tuple[str, str, int]]
) -> list[str]:
    """Classify ``(key, hash, seen ms)`` entries concurrently; their verdicts in order."""

    async def main() -> list[str]:
        client = connect_async(target.url, cluster=target.cluster)
        detector = ChangeDetector(client, site)
        try:
            states = await asyncio.gather(
                *(detector.classify(job, key, digest, seen_ms=ms) for key, digest, ms in entries)
            )
        finally:
            await client.aclose()
        return [state.verdict for state in states]

    return asyncio.run(main())


def test_new_then_unchanged_then_changed_with_timestamps(
    server: redis.Redis, target: Target, site: str
) -> None:
    key = f"{site}:product:A"
    assert run_classify(target, site, "j1", [(key, "h1", 1000)]) == ["new"]
    assert stored_state(server, site, key) == ("h1", 1000, 1000)
    assert run_classify(target, site, "j2", [(key, "h1", 2000)]) == ["unchanged"]
    assert stored_state(server, site, key) == ("h1", 1000, 1000)  # nothing moved
    assert run_classify(target, site, "j3", [(key, "h2", 3000)]) == ["changed"]
    assert stored_state(server, site, key) == ("h2", 1000, 3000)  # first_seen kept

    for job, verdict in (("j1", "new"), ("j2", "unchanged"), ("j3", "changed")):
        changes = job_changes(server, site, job)
        assert changes.counts == {v: int(v == verdict) for v in ("new", "changed", "unchanged")}
        assert changes.new == ({key} if verdict == "new" else set())
        assert changes.changed == ({key} if verdict == "changed" else set())
    # The exact counts live in the job's stats hash, next to the workers' counters.
    assert JobStats(server, site).get("j3")["items/changed"] == 1


def test_redelivery_in_the_same_job_keeps_the_verdict_and_counts_once(
    server: redis.Redis, target: Target, site: str
) -> None:
    key = f"{site}:product:A"
    run_classify(target, site, "j1", [(key, "h1", 1000)])
    # A worker killed before its ack: the item is crawled and classified again.
    assert run_classify(target, site, "j1", [(key, "h1", 1500)]) == ["new"]
    run_classify(target, site, "j2", [(key, "h2", 2000)])
    assert run_classify(target, site, "j2", [(key, "h2", 2500)]) == ["changed"]
    assert job_changes(server, site, "j1").counts["new"] == 1
    assert job_changes(server, site, "j2").counts == {"new": 0, "changed": 1, "unchanged": 0}
    assert stored_state(server, site, key) == ("h2", 1000, 2000)


def test_unchanged_that_changes_later_in_the_job_moves_to_changed(
    server: redis.Redis, target: Target, site: str
) -> None:
    key = f"{site}:product:A"
    run_classify(target, site, "j1", [(key, "h1", 1000)])
    assert run_classify(target, site, "j2", [(key, "h1", 2000)]) == ["unchanged"]
    assert run_classify(target, site, "j2", [(key, "h2", 2100)]) == ["changed"]
    changes = job_changes(server, site, "j2")
    assert changes.counts == {"new": 0, "changed": 1, "unchanged": 0}
    assert changes.changed == {key}


def test_racing_classifications_of_one_key_agree(
    server: redis.Redis, target: Target, site: str
) -> None:
    key = f"{site}:product:A"
    # 50 concurrent classifications from two "workers" (two clients, coalesced pipelines).
    entries = [(key, "h1", 1000 + n) for n in range(50)]

    async def main() -> list[str]:
        clients = [connect_async(target.url, cluster=target.cluster) for _ in range(2)]
        detectors = [ChangeDetector(client, site) for client in clients]
        try:
            states = await asyncio.gather(
                *(
                    detectors[n % 2].classify("j1", k, h, seen_ms=ms)
                    for n, (k, h, ms) in enumerate(entries)
                )
            )
        finally:
            for client in clients:
                await client.aclose()
        return [state.verdict for state in states]

    assert set(asyncio.run(main())) == {"new"}
    assert job_changes(server, site, "j1").counts == {"new": 1, "changed": 0, "unchanged": 0}
    first_seen = stored_state(server, site, key)
    assert first_seen is not None and first_seen[1] == first_seen[2]


def test_many_keys_in_one_batch(server: redis.Redis, target: Target, site: str) -> None:
    keys = [f"{site}:product:{n}" for n in range(1200)]  # more than one pipelined batch
    verdicts = run_classify(target, site, "j1", [(k, "h", 1000) for k in keys])
    assert verdicts == ["new"] * len(keys)
    changes = job_changes(server, site, "j1")
    assert changes.new == set(keys) and changes.counts["new"] == len(keys)
    ttl = server.ttl(SiteKeys(site).job_new("j1"))
    assert ttl > 24 * 3600  # per-job keys expire, like the job's stats


def test_redis_down_raises_for_the_caller_to_retry(site: str, tmp_path: object) -> None:
    async def main() -> None:
        client = connect_async("redis://127.0.0.1:1/0")
        try:
            with pytest.raises(redis.ConnectionError):
                await ChangeDetector(client, site).classify("j1", "k", "h")
        finally:
            await client.aclose()

    asyncio.run(main())


def test_the_rule_without_redis_matches_the_script() -> None:
    """``decide`` (the rule the stored-documents backend uses) gives the script's answers."""
    first = decide("k", None, "h1", 1000)
    assert (first.verdict, first.first_seen_ms, first.last_changed_ms) == ("new", 1000, 1000)
    known = Known("h1", 1000, 1000)
    same = decide("k", known, "h1", 2000)
    assert (same.verdict, same.first_seen_ms, same.last_changed_ms) == ("unchanged", 1000, 1000)
    moved = decide("k", known, "h2", 3000)
    assert (moved.verdict, moved.first_seen_ms, moved.last_changed_ms) == ("changed", 1000, 3000)
    # Within a job the strongest verdict stays; a weaker earlier one is replaced.
    assert decide("k", known, "h1", 2500, prior="new").verdict == "new"
    assert decide("k", known, "h1", 2500, prior="changed").verdict == "changed"
    assert decide("k", known, "h2", 2500, prior="unchanged").verdict == "changed"


def test_the_async_client_does_not_retry_and_takes_the_socket_params() -> None:
    async def main() -> tuple[int, float | None]:
        client = connect_async(
            "redis://127.0.0.1:1/0", params={"socket_timeout": 1.5, "retry_on_timeout": True}
        )
        try:
            connection = client.connection_pool.make_connection()
            return connection.retry.get_retries(), connection.socket_timeout
        finally:
            await client.aclose()

    # The caller (the dedup pipeline) is the one retry layer of the hop.
    assert asyncio.run(main()) == (0, 1.5)


def test_timestamps_come_from_redis_not_from_a_worker_clock_an_hour_behind(
    server: redis.Redis,
    target: Target,
    site: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two workers, one whose clock runs an hour behind: the times that order writes
    (the store's external version) and first_seen/last_changed are Redis' own."""
    key = f"{site}:product:A"
    real_time = time.time

    async def classify(job: str, digest: str) -> ItemState:
        client = connect_async(target.url, cluster=target.cluster)
        try:
            return await ChangeDetector(client, site).classify(job, key, digest)
        finally:
            await client.aclose()

    first = asyncio.run(classify("j1", "h1"))  # the correct worker
    monkeypatch.setattr(time, "time", lambda: real_time() - 3600)  # the late one
    second = asyncio.run(classify("j2", "h2"))
    monkeypatch.undo()
    redis_now_ms = int(server.time()[0]) * 1000
    assert abs(first.seen_ms - redis_now_ms) < 10_000
    # The late worker's write is the newer one: its version (seen_ms) is larger, so
    # Elasticsearch keeps it rather than refusing it as stale.
    assert first.seen_ms <= second.seen_ms < redis_now_ms + 10_000
    assert second.verdict == "changed" and second.last_changed_ms == second.seen_ms
    assert stored_state(server, site, key) == ("h2", first.seen_ms, second.seen_ms)
