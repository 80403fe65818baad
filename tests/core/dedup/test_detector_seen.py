"""``ChangeState.seen`` in Redis (one Redis and a Redis Cluster): an item seen unchanged
without its content (a 304, an unchanged listing card) counts ``unchanged`` exactly once
per key per job, keeps a stronger verdict, and an unknown key counts nothing."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
import redis

from core.dedup.detector import ChangeDetector, ItemState, job_changes, stored_state
from core.keys import SiteKeys
from core.redis_client import connect, connect_async
from tests.core.redis_target import Target


@pytest.fixture
def server(target: Target) -> Iterator[redis.Redis]:
    client = connect(target.url, cluster=target.cluster)
    yield client  # type: ignore[misc]
    if not target.cluster:
        client.flushdb()
    client.close()


@pytest.fixture
def site() -> str:
    return f"site-{uuid.uuid4().hex[:8]}"


# (job, key, hash or None for "seen", seen ms)
Call = tuple[str, str, str | None, int]


def run(target: Target, site: str, calls: list[Call]) -> list[ItemState | None]:
    """The calls concurrently (coalesced into one batch), their states in order."""

    async def main() -> list[ItemState | None]:
        client = connect_async(target.url, cluster=target.cluster)
        detector = ChangeDetector(client, site)
        try:
            return list(
                await asyncio.gather(
                    *(
                        detector.seen(job, key, seen_ms=ms)
                        if digest is None
                        else detector.classify(job, key, digest, seen_ms=ms)
                        for job, key, digest, ms in calls
                    )
                )
            )
        finally:
            await client.aclose()

    return asyncio.run(main())


def verdicts(target: Target, site: str, calls: list[Call]) -> list[str | None]:
    return [None if s is None else s.verdict for s in run(target, site, calls)]


def counts(server: redis.Redis, site: str, job: str) -> dict[str, int]:
    return job_changes(server, site, job).counts


def test_unknown_key_is_none_and_counts_nothing(
    server: redis.Redis, target: Target, site: str
) -> None:
    key = f"{site}:product:A"
    assert run(target, site, [("j1", key, None, 1000)]) == [None]
    keys = SiteKeys(site)
    assert counts(server, site, "j1") == {"new": 0, "changed": 0, "unchanged": 0}
    assert server.hlen(keys.job_verdicts("j1")) == 0
    assert stored_state(server, site, key) is None  # nothing written for the key


def test_seen_counts_unchanged_once_with_the_stored_timestamps(
    server: redis.Redis, target: Target, site: str
) -> None:
    key = f"{site}:product:A"
    run(target, site, [("j1", key, "h1", 1000)])
    run(target, site, [("j2", key, "h2", 2000)])  # changed: last_changed 2000
    (state,) = run(target, site, [("j3", key, None, 3000)])
    assert state == ItemState(key, "unchanged", "h2", 1000, 2000, 3000)
    # Re-delivered (a worker killed before its ack), also in one batch: counted once.
    again = run(target, site, [("j3", key, None, 3100), ("j3", key, None, 3200)])
    assert [s.verdict for s in again if s is not None] == ["unchanged", "unchanged"]
    assert counts(server, site, "j3") == {"new": 0, "changed": 0, "unchanged": 1}
    assert server.hget(SiteKeys(site).job_verdicts("j3"), key) == b"unchanged"
    assert stored_state(server, site, key) == ("h2", 1000, 2000)  # the site's state kept


def test_seen_keeps_a_stronger_verdict_and_yields_to_one(
    server: redis.Redis, target: Target, site: str
) -> None:
    a, b, c = (f"{site}:product:{n}" for n in "ABC")
    run(target, site, [("j1", a, "h1", 1000), ("j1", b, "h1", 1000), ("j1", c, "h1", 1000)])
    # A: new in j1, then seen in j1 -> stays new.
    assert verdicts(target, site, [("j1", a, None, 1500)]) == ["new"]
    assert counts(server, site, "j1") == {"new": 3, "changed": 0, "unchanged": 0}
    # j2: B changed by a full delivery, then seen -> changed; C seen, then changed by a
    # full delivery -> changed; A seen, then delivered in full unchanged -> unchanged.
    assert verdicts(target, site, [("j2", b, "h2", 2000)]) == ["changed"]
    assert verdicts(target, site, [("j2", b, None, 2100)]) == ["changed"]
    assert verdicts(target, site, [("j2", c, None, 2000)]) == ["unchanged"]
    assert verdicts(target, site, [("j2", c, "h3", 2100)]) == ["changed"]
    assert verdicts(target, site, [("j2", a, None, 2000), ("j2", a, "h1", 2100)]) == [
        "unchanged",
        "unchanged",
    ]
    assert counts(server, site, "j2") == {"new": 0, "changed": 2, "unchanged": 1}
    assert job_changes(server, site, "j2").changed == {b, c}
    assert stored_state(server, site, c) == ("h3", 1000, 2100)


def test_seen_clears_the_ledger_like_a_complete_delivery(
    server: redis.Redis, target: Target, site: str
) -> None:
    key = f"{site}:product:A"
    keys = SiteKeys(site)
    run(target, site, [("j1", key, "h1", 1000)])
    server.hset(keys.job_incomplete("j2"), key, "reviews")
    server.hset(keys.job_invalid("j2"), key, "price: float_type")
    run(target, site, [("j2", key, None, 2000)])
    assert server.hlen(keys.job_incomplete("j2")) == 0
    assert server.hlen(keys.job_invalid("j2")) == 0
    assert server.ttl(keys.job_verdicts("j2")) > 24 * 3600


def test_seen_and_classify_share_batches(server: redis.Redis, target: Target, site: str) -> None:
    known = [f"{site}:product:k{n}" for n in range(600)]
    run(target, site, [("j1", key, "h", 1000) for key in known])
    fresh = [f"{site}:product:f{n}" for n in range(300)]
    calls: list[Call] = [("j2", key, None, 2000) for key in known]
    calls += [("j2", key, None, 2000) for key in fresh]  # unknown: None
    calls += [("j2", key, "h", 2000) for key in fresh[:100]]  # new, in the same batches
    states = run(target, site, calls)
    assert [s.verdict for s in states[:600] if s is not None] == ["unchanged"] * 600
    # Queued in call order: each unknown key's seen runs before its classification.
    assert states[600:900] == [None] * 300
    assert counts(server, site, "j2") == {"new": 100, "changed": 0, "unchanged": 600}


def test_unsee_takes_back_only_an_unstored_unchanged(
    server: redis.Redis, target: Target, site: str
) -> None:
    a, b, c = (f"{site}:product:{n}" for n in "ABC")
    run(target, site, [("j1", a, "h1", 1000), ("j1", b, "h1", 1000), ("j1", c, "h1", 1000)])
    run(target, site, [("j2", a, None, 2000), ("j2", b, None, 2000), ("j2", c, "h2", 2000)])
    server.sadd(SiteKeys(site).job_stored("j2"), b)  # B's unchanged is stored: it stays

    async def unsee(key: str) -> bool:
        client = connect_async(target.url, cluster=target.cluster)
        try:
            return await ChangeDetector(client, site).unsee("j2", key)
        finally:
            await client.aclose()

    assert [asyncio.run(unsee(key)) for key in (a, b, c)] == [True, False, False]
    assert asyncio.run(unsee(a)) is False  # once
    assert counts(server, site, "j2") == {"new": 0, "changed": 1, "unchanged": 1}
    assert server.hget(SiteKeys(site).job_verdicts("j2"), a) is None
    # The page fetched in full is then counted from scratch.
    assert verdicts(target, site, [("j2", a, "h1", 2100)]) == ["unchanged"]
    assert counts(server, site, "j2") == {"new": 0, "changed": 1, "unchanged": 2}
