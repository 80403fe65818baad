"""Listing-card decisions: the pure rule, exhaustively, and its Lua state on a real Redis
and a real Redis Cluster (run sequence, one round trip per page, idempotent records)."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

import pytest
import redis

from core.cards import (
    CHANGED,
    DAY_MS,
    NEW,
    REFRESH,
    TOO_OLD,
    UNKNOWN,
    CardPolicy,
    CardRecord,
    CardState,
    Decision,
    card_hash,
    decide,
    key_slot,
    refresh_due,
)
from core.keys import SiteKeys
from core.redis_client import connect, connect_async
from tests.core.redis_target import Target

T = TypeVar("T")
POLICY = CardPolicy(max_age_days=7, refresh_runs=4)
NOW = 1_000 * DAY_MS


# -- the rule (pure) -----------------------------------------------------------------------


def test_card_hash_is_order_free_and_names_its_fields() -> None:
    assert card_hash({"price": 1.5, "name": "A"}) == card_hash({"name": "A", "price": 1.5})
    assert card_hash({"price": 1.5}) != card_hash({"price": 1.51})
    assert card_hash({"price": 1.5}) != card_hash({"amount": 1.5})
    assert card_hash({"price": 1.5}) != card_hash({"price": "1.5"})


def test_key_slot_is_stable() -> None:
    # The same number on every worker and every run (not Python's salted hash()).
    assert key_slot("demo:demo_product:DM-00001") == key_slot("demo:demo_product:DM-00001")
    assert len({key_slot(f"demo:demo_product:DM-{n:05d}") for n in range(1000)}) == 1000


@pytest.mark.parametrize("n", [1, 2, 3, 5, 10])
def test_every_item_is_due_exactly_once_in_every_n_consecutive_runs(n: int) -> None:
    keys = [f"demo:demo_product:DM-{i:05d}" for i in range(600)]
    for start in range(1, 2 * n + 2):
        for key in keys:
            due = [run for run in range(start, start + n) if refresh_due(key, run, n)]
            assert len(due) == 1, (key, start)
    # ... and about 1/n of the items in each run.
    for run in range(1, 6):
        share = sum(refresh_due(key, run, n) for key in keys) / len(keys)
        assert abs(share - 1 / n) < 0.06, (n, run, share)


def _expected(
    recorded: bool, known: bool, same: bool, age_ms: int, due: bool, runs_since: int
) -> str | None:
    if not recorded:
        return NEW
    if not known:
        return UNKNOWN
    if not same:
        return CHANGED
    if age_ms >= POLICY.max_age_ms:
        return TOO_OLD
    if due or runs_since >= POLICY.refresh_runs:
        return REFRESH
    return None


def test_the_rule_on_every_combination() -> None:
    """Skip only when the card is recorded, the item known, the hash equal, the fetch
    younger than max_age_days, not the item's refresh run, fewer than N runs since."""
    key = "demo:demo_product:DM-00042"
    runs = range(10, 10 + POLICY.refresh_runs)
    due_run = next(run for run in runs if refresh_due(key, run, POLICY.refresh_runs))
    other_run = next(run for run in runs if not refresh_due(key, run, POLICY.refresh_runs))
    max_age = int(POLICY.max_age_ms)
    checked = skipped = 0
    for recorded, known, same, age_ms, due, runs_since in itertools.product(
        (False, True),
        (False, True),
        (False, True),
        (0, max_age - 1, max_age, max_age + 1),
        (False, True),
        (-1, 0, 1, POLICY.refresh_runs - 1, POLICY.refresh_runs, POLICY.refresh_runs + 5),
    ):
        run = due_run if due else other_run
        record = CardRecord("h" if same else "old", NOW - age_ms, run - runs_since)
        got = decide(key, "h", record if recorded else None, known, NOW, run, POLICY)
        want = _expected(recorded, known, same, age_ms, due, runs_since)
        assert got == Decision(key, "h", want), (recorded, known, same, age_ms, due, runs_since)
        assert got.fetch is (want is not None)
        assert got.full is (want is not None and want != CHANGED)
        checked += 1
        skipped += want is None
    assert checked == 2 * 2 * 2 * 4 * 2 * 6 and skipped == 2 * 4  # 2 ages x 4 runs-since


def test_policy_and_record_encoding() -> None:
    with pytest.raises(ValueError):
        CardPolicy(max_age_days=0, refresh_runs=3)
    with pytest.raises(ValueError):
        CardPolicy(max_age_days=1, refresh_runs=0)
    record = CardRecord("abc", 1700000000123, 12)
    assert CardRecord.decode(record.encode()) == record
    assert CardRecord.decode(record.encode().encode()) == record
    assert CardRecord.decode(None) is None
    for junk in ("", "abc", "abc:1", ":1:2", "abc:x:2", "abc:1:y"):
        assert CardRecord.decode(junk) is None, junk


# -- the state in Redis --------------------------------------------------------------------


@pytest.fixture
def server(target: Target) -> Iterator[redis.Redis]:
    client = connect(target.url, cluster=target.cluster)
    yield client  # type: ignore[misc]
    client.close()


@pytest.fixture
def site() -> str:
    return f"cards-{uuid.uuid4().hex[:8]}"


def run_state(target: Target, site: str, work: Callable[[CardState], Awaitable[T]]) -> T:
    async def main() -> T:
        client = connect_async(target.url, cluster=target.cluster)
        try:
            return await work(CardState(client, site))
        finally:
            await client.aclose()

    return asyncio.run(main())


def test_run_sequence_is_assigned_once_per_job(
    target: Target, server: redis.Redis, site: str
) -> None:
    async def work(state: CardState) -> list[int]:
        runs = await asyncio.gather(*(state.run_of(job) for job in ["a", "b", "a", "b", "a"]))
        return [*runs, await state.run_of("c"), await state.run_of("a")]

    runs = run_state(target, site, work)
    # "a" and "b" are asked concurrently: either may get 1; each keeps its number.
    a, b = runs[0], runs[1]
    assert {a, b} == {1, 2}
    assert runs == [a, b, a, b, a, 3, a]
    keys = SiteKeys(site)
    assert server.get(keys.job_seq) == b"3"
    assert server.hgetall(keys.job_seq_of) == {
        b"a": str(a).encode(),
        b"b": str(b).encode(),
        b"c": b"3",
    }


def test_decisions_of_a_page_in_one_call(target: Target, server: redis.Redis, site: str) -> None:
    keys = SiteKeys(site)
    items = [f"{site}:demo_product:DM-{n:05d}" for n in range(8)]
    policy = CardPolicy(max_age_days=7, refresh_runs=1000)  # no refresh slot in 3 runs
    server.hset(keys.item_hashes, mapping={key: "content" for key in items[:7]})

    async def first(state: CardState) -> list[Decision]:
        return await state.decide("job-1", [(key, "h") for key in items], policy)

    assert [d.reason for d in run_state(target, site, first)] == [NEW] * 8

    async def record(state: CardState) -> tuple[int, int]:
        written = await state.record("job-1", [(key, "h") for key in items])
        again = await state.record("job-1", [(key, "h") for key in items])  # re-delivered
        return written, again

    before = server.hgetall(keys.card_state)
    assert run_state(target, site, record) == (8, 0) and before == {}
    stored = {k.decode(): CardRecord.decode(v) for k, v in server.hgetall(keys.card_state).items()}
    assert {record.run for record in stored.values() if record} == {1}
    assert all(record and record.card_hash == "h" for record in stored.values())

    # Skewed time: one record older than max_age_days (Redis' clock decides, not ours).
    old = stored[items[2]]
    assert old is not None
    server.hset(keys.card_state, items[2], CardRecord("h", old.fetched_ms - 8 * DAY_MS, 1).encode())
    cards = [(key, "h") for key in items]
    cards[1] = (items[1], "changed")

    async def second(state: CardState) -> list[Decision]:
        return await state.decide("job-2", cards, policy)

    reasons = [d.reason for d in run_state(target, site, second)]
    assert reasons == [None, CHANGED, TOO_OLD, None, None, None, None, UNKNOWN]
    assert server.hget(keys.job_seq_of, "job-2") == b"2"


def test_records_are_idempotent_per_job_and_never_go_back(
    target: Target, server: redis.Redis, site: str
) -> None:
    keys = SiteKeys(site)
    key = f"{site}:demo_product:DM-00001"

    def recorded() -> CardRecord:
        record = CardRecord.decode(server.hget(keys.card_state, key))
        assert record is not None
        return record

    def in_job(job: str, digest: str) -> int:
        async def work(state: CardState) -> int:
            return await state.record(job, [(key, digest)])

        return run_state(target, site, work)

    assert in_job("j1", "a") == 1
    first = recorded()
    assert in_job("j1", "a") == 0 and recorded() == first  # re-delivery: unchanged
    assert in_job("j2", "b") == 1 and recorded().run == 2
    assert in_job("j1", "c") == 0 and recorded().card_hash == "b"  # an older job never wins
    assert in_job("j2", "d") == 1 and recorded() == CardRecord("d", recorded().fetched_ms, 2)


def test_every_key_is_in_the_sites_slot() -> None:
    site = "demo"
    keys = SiteKeys(site)
    names = [keys.card_state, keys.job_seq, keys.job_seq_of, keys.item_hashes]
    assert all(name.startswith("{" + site + "}:") for name in names)
