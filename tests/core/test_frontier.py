"""The leased frontier against a real Redis: ordering, lease/ack, reclaim, drain."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
import redis

from core.drain import drain_state
from core.frontier import Push, RedisFrontier
from core.jobstats import DeltaTracker, JobStats
from core.workers import WorkerInfo, WorkerRegistry, check_consumers
from harness.redis_server import RedisServer


@pytest.fixture(params=["redis", "redis_cluster"])
def server(request: pytest.FixtureRequest, redis_server: RedisServer) -> Iterator[redis.Redis]:
    """Every test on one Redis and on the session's Redis Cluster (three masters): each
    script touches only the site's slot."""
    if request.param == "redis_cluster":
        client = request.getfixturevalue("redis_cluster").client()
    else:
        client = redis_server.client()
    yield client
    client.flushdb()


@pytest.fixture
def site() -> str:
    return f"site-{uuid.uuid4().hex[:8]}"


def beat(server: redis.Redis, site: str, worker: str, *, idle: bool = True) -> None:
    WorkerRegistry(server, site, ttl=5).heartbeat(
        WorkerInfo(worker_id=worker, site=site, idle=idle)
    )


def test_priority_then_fifo_order(server: redis.Redis, site: str) -> None:
    frontier = RedisFrontier(server, site)
    for name, priority in [(b"a", 0), (b"b", 0), (b"hi", 5), (b"c", 0), (b"low", -1)]:
        frontier.push(name, priority)
    popped = [lease.data for lease in frontier.lease("w1", 10)]
    assert popped == [b"hi", b"a", b"b", b"c", b"low"]


def test_leased_entries_stay_in_redis_until_acked(server: redis.Redis, site: str) -> None:
    frontier = RedisFrontier(server, site)
    frontier.push(b"r1")
    frontier.push(b"r2")
    leases = frontier.lease("w1", 2)
    assert frontier.queued() == 0 and frontier.leased() == 2
    assert frontier.leased_by() == {"w1": 2}
    assert frontier.ack(leases[0].lease_id) == 1
    assert frontier.ack(leases[0].lease_id) == 0  # idempotent
    assert frontier.leased() == 1


def test_push_replacing_a_lease_is_atomic(server: redis.Redis, site: str) -> None:
    frontier = RedisFrontier(server, site)
    frontier.push(b"original")
    (lease,) = frontier.lease("w1", 1)
    frontier.push(b"retry-of-original", replaces_lease=lease.lease_id)
    assert frontier.leased() == 0
    assert [entry.data for entry in frontier.lease("w2", 5)] == [b"retry-of-original"]


def test_reclaim_requeues_only_dead_workers_leases(server: redis.Redis, site: str) -> None:
    frontier = RedisFrontier(server, site)
    for i in range(4):
        frontier.push(f"r{i}".encode(), priority=i)
    beat(server, site, "alive")
    alive = frontier.lease("alive", 2)  # r3, r2
    frontier.lease("dead", 2)  # r1, r0: never heartbeats
    assert frontier.reclaim() == 2
    assert frontier.leased_by() == {"alive": 2}
    # Requeued with their original priority.
    assert [entry.data for entry in frontier.lease("alive", 5)] == [b"r1", b"r0"]
    frontier.ack(*(lease.lease_id for lease in alive))


def test_release_worker_requeues_its_own_leases(server: redis.Redis, site: str) -> None:
    frontier = RedisFrontier(server, site)
    frontier.push(b"x")
    beat(server, site, "w1")
    frontier.lease("w1", 1)
    assert frontier.reclaim() == 0
    assert frontier.reclaim(release_worker="w1") == 1
    assert frontier.queued() == 1


def test_start_entries_are_leased_and_reclaimed_to_the_start_list(
    server: redis.Redis, site: str
) -> None:
    frontier = RedisFrontier(server, site)
    frontier.push_start(['{"url": "http://a/"}', '{"url": "http://b/"}'])
    (lease,) = frontier.lease_start("gone", 1)
    assert lease.is_start and lease.data == b'{"url": "http://a/"}'
    assert frontier.queued() == 1
    assert frontier.reclaim() == 1
    assert server.lrange(frontier.keys.start_urls, 0, -1) == [
        b'{"url": "http://b/"}',
        b'{"url": "http://a/"}',
    ]


def test_release_requeues_only_the_named_leases_the_worker_still_owns(
    server: redis.Redis, site: str
) -> None:
    """What a worker does with leases Redis granted it by a call whose reply was lost."""
    frontier = RedisFrontier(server, site)
    for i in range(4):
        frontier.push(f"r{i}".encode(), priority=i)
    frontier.push_start(['{"url": "http://s/"}'])
    beat(server, site, "w1")
    known = frontier.lease("w1", 2)  # r3, r2: the reply arrived
    lost = frontier.lease("w1", 1) + frontier.lease_start("w1", 1)  # r1, start: reply lost
    other = frontier.lease("w2", 1)  # r0, another worker's
    held = frontier.leases_of("w1")
    assert held == {lease.lease_id for lease in known + lost}
    orphans = held - {lease.lease_id for lease in known}
    assert frontier.release("w1", *orphans, other[0].lease_id) == 2
    assert frontier.leases_of("w1") == {lease.lease_id for lease in known}
    assert frontier.leased_by() == {"w1": 2, "w2": 1}
    # Back where they came from: the queue at their old score, the start list.
    assert [entry.data for entry in frontier.lease("w3", 5)] == [b"r1"]
    assert server.lrange(frontier.keys.start_urls, 0, -1) == [b'{"url": "http://s/"}']
    assert frontier.release("w1", *orphans) == 0  # idempotent
    assert frontier.release("w1") == 0


def test_worker_registry_prunes_expired_heartbeats(server: redis.Redis, site: str) -> None:
    registry = WorkerRegistry(server, site, ttl=0.3)
    registry.heartbeat(WorkerInfo(worker_id="w1", site=site, in_flight=3))
    registry.heartbeat(WorkerInfo(worker_id="w2", site=site))
    assert sorted(w.worker_id for w in registry.live()) == ["w1", "w2"]
    assert next(w for w in registry.live() if w.worker_id == "w1").in_flight == 3
    time.sleep(0.5)
    registry.heartbeat(WorkerInfo(worker_id="w2", site=site))
    assert [w.worker_id for w in registry.live()] == ["w2"]
    assert server.smembers(registry.keys.workers) == {b"w2"}


def test_job_stats_add_deltas(server: redis.Redis, site: str) -> None:
    stats = JobStats(server, site)
    tracker = DeltaTracker()
    snapshot: dict[str, object] = {"items": 3, "elapsed": 1.5, "flag": True}
    stats.add("j1", tracker.deltas(snapshot))
    tracker.commit(snapshot)
    snapshot = {"items": 5, "errors/Timeout": 1}
    stats.add("j1", tracker.deltas(snapshot))
    tracker.commit(snapshot)
    stats.add("j1", tracker.deltas(snapshot))  # nothing changed: no-op
    assert stats.get("j1") == {"items": 5, "errors/Timeout": 1}


def test_drain_needs_empty_queue_no_leases_idle_workers_and_stable_counters(
    server: redis.Redis, site: str
) -> None:
    frontier = RedisFrontier(server, site)
    frontier.push(b"r")
    beat(server, site, "w1", idle=False)
    assert not drain_state(server, site, "j", stable_window=0).drained
    (lease,) = frontier.lease("w1", 1)
    state = drain_state(server, site, "j", stable_window=0)
    assert (state.queued, state.leased, state.busy_workers) == (0, 1, ["w1"])
    assert not state.drained
    frontier.ack(lease.lease_id)
    beat(server, site, "w1", idle=True)
    JobStats(server, site).add("j", {"item_scraped_count": 1})
    first = drain_state(server, site, "j", stable_window=0.3)
    assert not first.drained and first.counters_stable_for == 0.0
    time.sleep(0.4)
    second = drain_state(server, site, "j", stable_window=0.3)
    assert second.drained, second.describe()
    JobStats(server, site).add("j", {"item_scraped_count": 1})  # a late item resets it
    assert not drain_state(server, site, "j", stable_window=0.3).drained


def test_drain_reclaims_dead_workers_leases(server: redis.Redis, site: str) -> None:
    frontier = RedisFrontier(server, site)
    frontier.push(b"r")
    frontier.lease("crashed", 1)
    state = drain_state(server, site, "j")
    assert state.reclaimed == 1 and state.queued == 1 and not state.drained


def test_consumer_check_names_the_missing_consumers(server: redis.Redis, site: str) -> None:
    missing = check_consumers(server, site)
    assert not missing.ok
    assert f"{{{site}}}:start_urls" in missing.message()
    assert f"{{{site}}}:requests" in missing.message()
    beat(server, site, "w1")
    present = check_consumers(server, site)
    assert present.ok and "w1" in present.message()


def test_push_with_fingerprint_queues_each_url_once(server: redis.Redis, site: str) -> None:
    frontier = RedisFrontier(server, site)
    seen = frontier.keys.seen("job")
    assert frontier.push(b"page", seen_key=seen, fingerprint="fp1")
    assert not frontier.push(b"page-again", seen_key=seen, fingerprint="fp1")
    assert frontier.queued() == 1
    # A redirect to an already-seen page still releases the lease it continues.
    (lease,) = frontier.lease("w1", 1)
    assert not frontier.push(
        b"dup", replaces_lease=lease.lease_id, seen_key=seen, fingerprint="fp1"
    )
    assert frontier.leased() == 0 and frontier.queued() == 0
    assert server.ttl(seen) > 0


def test_push_many_is_each_push_in_order_in_one_call(server: redis.Redis, site: str) -> None:
    frontier = RedisFrontier(server, site)
    seen = frontier.keys.seen("job")
    frontier.push(b"first", seen_key=seen, fingerprint="fp0")
    (lease,) = frontier.lease("w1", 1)
    queued = frontier.push_many(
        [
            Push(b"a", seen_key=seen, fingerprint="fp1"),
            Push(b"a-again", seen_key=seen, fingerprint="fp1"),  # same batch: seen once
            Push(b"hi", 5, seen_key=seen, fingerprint="fp2"),
            Push(b"seen-before", seen_key=seen, fingerprint="fp0"),
            # A retry of the leased request: its lease is released in the same step.
            Push(b"retry", replaces_lease=lease.lease_id),
            Push(b"b", seen_key=frontier.keys.seen("other-job"), fingerprint="fp1"),
        ]
    )
    assert queued == [True, False, True, False, True, True]
    assert frontier.leased() == 0 and frontier.leased_by() == {}
    popped = [lease.data for lease in frontier.lease("w1", 10)]
    assert popped == [b"hi", b"a", b"retry", b"b"]
    assert frontier.push_many([]) == []
    with pytest.raises(ValueError):
        frontier.push_many([Push(b"x", seen_key=seen)])


def redis_ms(server: redis.Redis) -> int:
    seconds, micros = server.time()
    return int(seconds) * 1000 + int(micros) // 1000


def test_dead_workers_leases_return_once_with_their_scores_in_bounded_batches(
    server: redis.Redis, site: str
) -> None:
    frontier = RedisFrontier(server, site)
    for i in range(1050):
        frontier.push(f"r{i}".encode(), priority=i % 7)
    scores = dict(server.zrange(frontier.keys.queue, 0, -1, withscores=True))
    beat(server, site, "live")
    live = frontier.lease("live", 50)
    dead = frontier.lease("dead", 1000)  # never heartbeats: due at once
    assert frontier.leased_by() == {"live": 50, "dead": 1000}

    rounds = []
    while n := frontier.reclaim(batch=100, rounds=1):
        rounds.append(n)
    assert rounds == [100] * 10  # each call bounded by the batch; none lost, none twice
    requeued = dict(server.zrange(frontier.keys.queue, 0, -1, withscores=True))
    assert requeued == {lease.data: scores[lease.data] for lease in dead}
    # The live worker's leases were not touched; the dead worker left the deadlines.
    assert frontier.leased() == 50 and frontier.leased_by() == {"live": 50}
    assert server.zscore(frontier.keys.worker_deadlines, "dead") is None
    assert frontier.ack(*(lease.lease_id for lease in live)) == 50
    assert frontier.leased_by() == {}


def test_acks_and_replacing_pushes_leave_the_workers_lease_set(
    server: redis.Redis, site: str
) -> None:
    frontier = RedisFrontier(server, site)
    for name in (b"a", b"b", b"c"):
        frontier.push(name)
    beat(server, site, "w1")
    a, b, c = frontier.lease("w1", 3)
    frontier.ack(a.lease_id)
    frontier.push(b"b-retry", replaces_lease=b.lease_id)
    assert server.smembers(frontier.keys.worker_leases("w1")) == {c.lease_id.encode()}
    assert frontier.reclaim(release_worker="w1") == 1
    assert server.exists(frontier.keys.worker_leases("w1")) == 0


def test_release_and_unregister_return_all_of_a_workers_leases(
    server: redis.Redis, site: str
) -> None:
    frontier = RedisFrontier(server, site)
    for i in range(40):
        frontier.push(f"r{i}".encode())
    registry = WorkerRegistry(server, site, ttl=30)
    registry.heartbeat(WorkerInfo(worker_id="closing", site=site))
    registry.heartbeat(WorkerInfo(worker_id="gone", site=site))
    frontier.lease("closing", 30)
    frontier.lease("gone", 10)
    # A clean close releases everything it holds, whatever the batch size.
    assert frontier.reclaim(release_worker="closing", batch=7, rounds=1) == 30
    # An unregistered worker is due at once, though its heartbeat TTL had time left.
    registry.unregister("gone")
    assert frontier.reclaim() == 10
    assert frontier.leased() == 0 and frontier.queued() == 40


def test_liveness_runs_on_redis_clock_not_the_workers(
    server: redis.Redis, site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    frontier = RedisFrontier(server, site)
    frontier.push(b"r")
    registry = WorkerRegistry(server, site, ttl=1.0)
    real_time = time.time
    with monkeypatch.context() as clock:
        clock.setattr(time, "time", lambda: real_time() - 3600)  # an hour behind
        info = WorkerInfo(worker_id="late", site=site)
        beat_at = registry.heartbeat(info)
    assert info.heartbeat_at < real_time() - 3000  # the worker's clock: shown, not used
    deadline = server.zscore(frontier.keys.worker_deadlines, "late")
    assert deadline == beat_at + 1000  # Redis' TIME + the TTL
    frontier.lease("late", 1)
    assert [w.worker_id for w in registry.live()] == ["late"]
    assert frontier.reclaim() == 0
    # Alive until the deadline on Redis' clock, reclaimed right after it.
    while True:
        before = redis_ms(server)
        reclaimed = frontier.reclaim()
        after = redis_ms(server)
        if reclaimed:
            break
        assert before < deadline
        time.sleep(0.01)
    assert reclaimed == 1 and deadline <= after < deadline + 1000


def test_leases_from_before_the_lease_sets_are_indexed_once(server: redis.Redis, site: str) -> None:
    """A Redis holding leases of the previous layout (lease hashes only): the first
    reclaim indexes them; the dead owner's go back, the live owner's stay."""
    frontier = RedisFrontier(server, site)
    k = frontier.keys
    for lease_id, data, score, owner in [
        ("1", b"old-dead-a", "-5", "old-dead"),
        ("2", b"old-dead-b", "start", "old-dead"),
        ("3", b"old-live", "0", "old-live"),
    ]:
        server.hset(k.leases, lease_id, data)
        server.hset(k.lease_scores, lease_id, score)
        server.hset(k.lease_owners, lease_id, owner)
    server.set(k.worker_prefix + "old-live", "{}", px=30_000)
    assert frontier.reclaim() == 2
    assert server.zrange(k.queue, 0, -1, withscores=True) == [(b"old-dead-a", -5.0)]
    assert server.lrange(k.start_urls, 0, -1) == [b"old-dead-b"]
    assert frontier.leased_by() == {"old-live": 1}
    assert server.exists(k.lease_index) == 1
    assert frontier.ack("3") == 1 and frontier.leased_by() == {}


def test_drain_stability_runs_on_redis_clock(
    server: redis.Redis, site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = drain_state(server, site, "j", stable_window=0.2)
    assert first.counters_stable_for == 0.0
    real_time = time.time
    # A poller whose clock is an hour ahead does not see the window as long passed...
    monkeypatch.setattr(time, "time", lambda: real_time() + 3600)
    second = drain_state(server, site, "j", stable_window=0.2)
    assert 0.0 <= second.counters_stable_for < 60 and not second.drained
    monkeypatch.undo()
    # ...and every poller sees it pass once it has, on Redis' clock.
    start = real_time()
    while not drain_state(server, site, "j", stable_window=0.2).drained:
        assert real_time() - start < 30
        time.sleep(0.02)


def test_a_job_starts_by_redis_clock_not_the_producers(
    server: redis.Redis, site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() - 3600)  # a producer an hour behind
    RedisFrontier(server, site).start_job("job-1")
    monkeypatch.undo()
    keys = RedisFrontier(server, site).keys
    assert server.get(keys.current_job) == b"job-1"
    started = server.zscore(keys.jobs, "job-1")
    assert started is not None and abs(started - real_time()) < 10
