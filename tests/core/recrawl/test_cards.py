"""Listing-card decisions: the pure rule, exhaustively, and its Lua state on a real Redis
and a real Redis Cluster (run sequence, one round trip per page, idempotent records,
records void under another layout, a job that stops skipping a page type)."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

import pytest
import redis

from core.keys import SiteKeys
from core.recrawl.cards import (
    CHANGED,
    DAY_MS,
    LAYOUT,
    NEW,
    REFRESH,
    TOO_OLD,
    UNKNOWN,
    UNPARSED,
    CardPolicy,
    CardRecord,
    CardState,
    Decision,
    JobView,
    card_hash,
    decide,
    key_slot,
    refresh_due,
)
from core.redis_client import connect, connect_async
from tests.core.redis_target import Target

T = TypeVar("T")
POLICY = CardPolicy(max_age_days=7, refresh_runs=4)
NOW = 1_000 * DAY_MS
LAYOUT_ID = "0123456789abcdef"


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
    recorded: bool,
    known: bool,
    same: bool,
    age_ms: int,
    due: bool,
    runs_since: int,
    layout: str | None = LAYOUT_ID,
    stopped: bool = False,
) -> str | None:
    if not recorded:
        return NEW
    if stopped:
        return UNPARSED
    if layout != LAYOUT_ID:
        return LAYOUT
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
    """Skip only when the card is recorded under this job's layout, the job still skips,
    the item is known, the hash equal, the fetch younger than max_age_days, not the
    item's refresh run, fewer than N runs since."""
    key = "demo:demo_product:DM-00042"
    runs = range(10, 10 + POLICY.refresh_runs)
    due_run = next(run for run in runs if refresh_due(key, run, POLICY.refresh_runs))
    other_run = next(run for run in runs if not refresh_due(key, run, POLICY.refresh_runs))
    max_age = int(POLICY.max_age_ms)
    checked = skipped = 0
    for recorded, known, same, age_ms, due, runs_since, layout, stopped in itertools.product(
        (False, True),
        (False, True),
        (False, True),
        (0, max_age - 1, max_age, max_age + 1),
        (False, True),
        (-1, 0, 1, POLICY.refresh_runs - 1, POLICY.refresh_runs, POLICY.refresh_runs + 5),
        (LAYOUT_ID, "fedcba9876543210", None),  # None: recorded before layouts were kept
        (False, True),
    ):
        run = due_run if due else other_run
        record = CardRecord("h" if same else "old", NOW - age_ms, run - runs_since, layout)
        job = JobView(NOW, run, LAYOUT_ID, stopped)
        got = decide(key, "h", record if recorded else None, known, job, POLICY)
        case = (recorded, known, same, age_ms, due, runs_since, layout, stopped)
        want = _expected(*case)
        assert got == Decision(key, "h", want), case
        assert got.fetch is (want is not None)
        assert got.full is (want is not None and want != CHANGED)
        checked += 1
        skipped += want is None
    assert checked == 2 * 2 * 2 * 4 * 2 * 6 * 3 * 2
    assert skipped == 2 * 4  # 2 ages x 4 runs-since, under this layout, still skipping


def test_policy_and_record_encoding() -> None:
    with pytest.raises(ValueError):
        CardPolicy(max_age_days=0, refresh_runs=3)
    with pytest.raises(ValueError):
        CardPolicy(max_age_days=1, refresh_runs=0)
    record = CardRecord("abc", 1700000000123, 12, LAYOUT_ID)
    assert record.encode() == f"abc:1700000000123:12:L{LAYOUT_ID}"
    assert CardRecord.decode(record.encode()) == record
    assert CardRecord.decode(record.encode().encode()) == record
    # Made before layouts were kept: read, of no layout.
    assert CardRecord.decode("abc:1700000000123:12") == CardRecord("abc", 1700000000123, 12)
    assert CardRecord.decode(None) is None
    for junk in ("", "abc", "abc:1", ":1:2", "abc:x:2", "abc:1:y", "abc:1:Lx", ":1:2:Lx"):
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
        cards = [(key, "h") for key in items]
        return await state.decide("job-1", cards, policy, callback="parse", layout=LAYOUT_ID)

    assert [d.reason for d in run_state(target, site, first)] == [NEW] * 8

    async def record(state: CardState) -> tuple[int, int]:
        entries = [(key, "h") for key in items]
        written = await state.record("job-1", entries, layout=LAYOUT_ID)
        again = await state.record("job-1", entries, layout=LAYOUT_ID)  # re-delivered
        return written, again

    before = server.hgetall(keys.card_state)
    assert run_state(target, site, record) == (8, 0) and before == {}
    stored = {k.decode(): CardRecord.decode(v) for k, v in server.hgetall(keys.card_state).items()}
    assert {record.run for record in stored.values() if record} == {1}
    assert all(record and record.card_hash == "h" for record in stored.values())
    assert {record.layout for record in stored.values() if record} == {LAYOUT_ID}

    # Skewed time: one record older than max_age_days (Redis' clock decides, not ours).
    old = stored[items[2]]
    assert old is not None
    too_old = CardRecord("h", old.fetched_ms - 8 * DAY_MS, 1, LAYOUT_ID)
    server.hset(keys.card_state, items[2], too_old.encode())
    cards = [(key, "h") for key in items]
    cards[1] = (items[1], "changed")

    async def second(state: CardState) -> list[Decision]:
        return await state.decide("job-2", cards, policy, callback="parse", layout=LAYOUT_ID)

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

    def in_job(job: str, digest: str, layout: str = LAYOUT_ID) -> int:
        async def work(state: CardState) -> int:
            return await state.record(job, [(key, digest)], layout=layout)

        return run_state(target, site, work)

    assert in_job("j1", "a") == 1
    first = recorded()
    assert in_job("j1", "a") == 0 and recorded() == first  # re-delivery: unchanged
    assert in_job("j2", "b") == 1 and recorded().run == 2
    assert in_job("j1", "c") == 0 and recorded().card_hash == "b"  # an older job never wins
    assert in_job("j2", "d") == 1
    assert recorded() == CardRecord("d", recorded().fetched_ms, 2, LAYOUT_ID)
    # A re-delivery in the same job under another layout is a new record.
    assert in_job("j2", "d", "fedcba9876543210") == 1 and recorded().layout == "fedcba9876543210"


def test_every_key_is_in_the_sites_slot() -> None:
    site = "demo"
    keys = SiteKeys(site)
    names = [
        keys.card_state,
        keys.job_seq,
        keys.job_seq_of,
        keys.item_hashes,
        keys.job_layout("j"),
        keys.job_unparsed("j"),
        keys.job_skipped("j", "parse_product"),
    ]
    assert all(name.startswith("{" + site + "}:") for name in names)


def test_a_record_of_another_layout_is_void_and_the_producers_layout_wins(
    target: Target, server: redis.Redis, site: str
) -> None:
    """Cards recorded under one accepted baseline are fetched (``layout``) once another
    is the job's; the job's layout is the producer's (``job_layout``) over the worker's."""
    keys = SiteKeys(site)
    items = [f"{site}:demo_product:DM-{n:05d}" for n in range(4)]
    policy = CardPolicy(max_age_days=7, refresh_runs=1000)
    server.hset(keys.item_hashes, mapping=dict.fromkeys(items, "content"))
    cards = [(key, "h") for key in items]

    async def record(state: CardState) -> int:
        return await state.record("job-1", cards, layout="old")

    assert run_state(target, site, record) == len(items)

    def reasons(job: str, worker_layout: str) -> list[str | None]:
        async def work(state: CardState) -> list[Decision]:
            return await state.decide(job, cards, policy, callback="parse", layout=worker_layout)

        return [d.reason for d in run_state(target, site, work)]

    assert reasons("job-2", "old") == [None] * 4  # the same layout: skipped
    assert reasons("job-3", "new") == [LAYOUT] * 4  # the worker's own, without a producer's
    server.set(keys.job_layout("job-4"), "new")
    assert reasons("job-4", "old") == [LAYOUT] * 4  # the producer's wins over the worker's
    server.set(keys.job_layout("job-5"), "old")
    assert reasons("job-5", "new") == [None] * 4


def test_a_job_that_stops_skipping_hands_its_skipped_pages_over_once(
    target: Target, server: redis.Redis, site: str
) -> None:
    keys = SiteKeys(site)
    items = [f"{site}:demo_product:DM-{n:05d}" for n in range(3)]
    policy = CardPolicy(max_age_days=7, refresh_runs=1000)
    server.hset(keys.item_hashes, mapping=dict.fromkeys(items, "content"))
    cards = [(key, "h") for key in items]

    async def work(state: CardState) -> tuple[object, ...]:
        await state.record("job-1", cards, layout=LAYOUT_ID)
        kept = await state.skip("job-2", "parse_product", [(items[0], "page-0")])
        again = await state.skip("job-2", "parse_product", [(items[1], "page-1")])
        other = await state.skip("job-2", "parse_other", [(items[2], "page-2")])
        taken = await state.stop("job-2", "parse_product", "worker-a")
        retried = await state.stop("job-2", "parse_product", "worker-a")  # a lost reply
        elsewhere = await state.stop("job-2", "parse_product", "worker-b")
        refused = await state.skip("job-2", "parse_product", [(items[2], "page-2")])
        decided = await state.decide(
            "job-2", cards, policy, callback="parse_product", layout=LAYOUT_ID
        )
        still = await state.decide("job-2", cards, policy, callback="parse_other", layout=LAYOUT_ID)
        return kept, again, other, taken, retried, elsewhere, refused, decided, still

    kept, again, other, taken, retried, elsewhere, refused, decided, still = run_state(
        target, site, work
    )
    assert (kept, again, other) == (True, True, True)
    assert sorted(taken) == [(items[0], "page-0"), (items[1], "page-1")]  # type: ignore[arg-type]
    assert retried == taken and elsewhere == []
    assert refused is False  # stopped: the caller fetches these cards' pages
    assert [d.reason for d in decided] == [UNPARSED] * 3  # type: ignore[attr-defined]
    assert [d.reason for d in still] == [None] * 3  # type: ignore[attr-defined]
    assert server.smembers(keys.job_unparsed("job-2")) == {b"parse_product"}
    assert server.ttl(keys.job_unparsed("job-2")) > 0
