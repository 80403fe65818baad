"""The leased frontier against a real Redis: ordering, lease/ack, reclaim, drain; on one
Redis and a three-master cluster, in one partition and in three."""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Iterator

import pytest
import redis

from core.figures.stats import DeltaTracker, JobStats
from core.frontier.drain import drain_state
from core.frontier.layout import seen_bucket
from core.frontier.queue import (
    FrontierLayoutError,
    Lease,
    Push,
    RedisFrontier,
    lease_partition,
    partition_of,
)
from core.frontier.workers import WorkerInfo, WorkerRegistry, check_consumers
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


@pytest.fixture(params=[1, 3], ids=["1-partition", "3-partitions"])
def parts(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@pytest.fixture
def frontier(server: redis.Redis, site: str, parts: int) -> RedisFrontier:
    """The site's frontier, its partition count recorded as a producer does."""
    return RedisFrontier.adopt(server, site, parts)


def lease_all(frontier: RedisFrontier, worker: str, n: int = 10) -> list[Lease]:
    """Lease until the queue is empty (a lease call takes from one partition)."""
    out: list[Lease] = []
    while batch := frontier.lease(worker, n):
        out += batch
    return out


def fp(name: str) -> bytes:
    """A request fingerprint as the dupefilter makes them: a 20-byte digest."""
    return hashlib.sha1(name.encode()).digest()


def beat(server: redis.Redis, site: str, worker: str, *, idle: bool = True) -> None:
    WorkerRegistry(server, site, ttl=5).heartbeat(
        WorkerInfo(worker_id=worker, site=site, idle=idle)
    )


def test_priority_then_fifo_order(frontier: RedisFrontier) -> None:
    for name, priority in [(b"a", 0), (b"b", 0), (b"hi", 5), (b"c", 0), (b"low", -1)]:
        frontier.push(name, priority)
    popped = [lease.data for lease in lease_all(frontier, "w1")]
    if frontier.partitions == 1:
        assert popped == [b"hi", b"a", b"b", b"c", b"low"]
    # Across partitions: priority first (each batch starts at the best head and never
    # passes another partition's head), FIFO within a partition.
    assert popped[0] == b"hi" and popped[-1] == b"low"
    assert sorted(popped) == [b"a", b"b", b"c", b"hi", b"low"]


def test_a_lease_never_passes_a_better_head_in_another_partition(
    server: redis.Redis, site: str
) -> None:
    frontier = RedisFrontier.adopt(server, site, 4)
    pushed = [(f"r{i}".encode(), i % 5) for i in range(200)]
    for data, priority in pushed:
        frontier.push(data, priority)
    priorities = dict(pushed)
    popped = [priorities[lease.data] for lease in lease_all(frontier, "w1", 7)]
    assert popped == sorted(popped, reverse=True) and len(popped) == 200
    assert {lease_partition(lease.lease_id) for lease in frontier.lease("w1", 1)} <= {0}


def test_leased_entries_stay_in_redis_until_acked(frontier: RedisFrontier) -> None:
    frontier.push(b"r1")
    frontier.push(b"r2")
    leases = lease_all(frontier, "w1", 2)
    assert frontier.queued() == 0 and frontier.leased() == 2
    assert frontier.leased_by() == {"w1": 2}
    assert frontier.ack(leases[0].lease_id) == 1
    assert frontier.ack(leases[0].lease_id) == 0  # idempotent
    assert frontier.leased() == 1


def test_push_replacing_a_lease_is_atomic(frontier: RedisFrontier) -> None:
    frontier.push(b"original")
    (lease,) = frontier.lease("w1", 1)
    frontier.push(b"retry-of-original", replaces_lease=lease.lease_id)
    assert frontier.leased() == 0
    (retry,) = lease_all(frontier, "w2", 5)
    assert retry.data == b"retry-of-original"
    # A retry without a dedup check stays in its lease's partition: one atomic step.
    assert lease_partition(retry.lease_id) == lease_partition(lease.lease_id)


def test_a_redirect_to_another_partition_ends_its_lease_after_the_push(
    server: redis.Redis, site: str
) -> None:
    frontier = RedisFrontier.adopt(server, site, 3)
    frontier.push(b"page", seen_job="j", fingerprint=fp("page"))
    (lease,) = frontier.lease("w1", 1)
    here = lease_partition(lease.lease_id)
    other = next(fp(f"x{i}") for i in range(100) if partition_of(fp(f"x{i}"), 3) != here)
    assert frontier.push(b"target", replaces_lease=lease.lease_id, seen_job="j", fingerprint=other)
    assert frontier.leased() == 0 and frontier.leases_of("w1") == set()
    assert [x.data for x in lease_all(frontier, "w2")] == [b"target"]


def test_reclaim_requeues_only_dead_workers_leases(
    frontier: RedisFrontier, server: redis.Redis, site: str
) -> None:
    for i in range(4):
        frontier.push(f"r{i}".encode(), priority=i)
    beat(server, site, "alive")
    alive = frontier.lease("alive", 1) + frontier.lease("alive", 1)  # r3, r2
    frontier.lease("dead", 1) + frontier.lease("dead", 1)  # r1, r0: never heartbeats
    assert frontier.reclaim() == 2
    assert frontier.leased_by() == {"alive": 2}
    # Requeued with their original priority.
    assert [entry.data for entry in lease_all(frontier, "alive", 5)] == [b"r1", b"r0"]
    frontier.ack(*(lease.lease_id for lease in alive))


def test_release_worker_requeues_its_own_leases(
    frontier: RedisFrontier, server: redis.Redis, site: str
) -> None:
    frontier.push(b"x")
    beat(server, site, "w1")
    frontier.lease("w1", 1)
    assert frontier.reclaim() == 0
    assert frontier.reclaim(release_worker="w1") == 1
    assert frontier.queued() == 1


def start_list(server: redis.Redis, frontier: RedisFrontier) -> list[bytes]:
    return [e for part in frontier.parts for e in server.lrange(part.start_urls, 0, -1)]


def test_start_entries_are_leased_and_reclaimed_to_the_start_list(
    frontier: RedisFrontier, server: redis.Redis
) -> None:
    entries = [b'{"url": "http://a/"}', b'{"url": "http://b/"}']
    frontier.push_start([e.decode() for e in entries])
    (lease,) = frontier.lease_start("gone", 1)
    assert lease.is_start and lease.data in entries
    assert frontier.queued() == 1
    assert frontier.reclaim() == 1
    assert sorted(start_list(server, frontier)) == entries


def test_release_requeues_only_the_named_leases_the_worker_still_owns(
    frontier: RedisFrontier, server: redis.Redis, site: str
) -> None:
    """What a worker does with leases Redis granted it by a call whose reply was lost."""
    for i in range(4):
        frontier.push(f"r{i}".encode(), priority=i)
    frontier.push_start(['{"url": "http://s/"}'])
    beat(server, site, "w1")
    known = frontier.lease("w1", 1) + frontier.lease("w1", 1)  # r3, r2: the reply arrived
    lost = frontier.lease("w1", 1) + frontier.lease_start("w1", 1)  # r1, start: reply lost
    other = frontier.lease("w2", 1)  # r0, another worker's
    held = frontier.leases_of("w1")
    assert held == {lease.lease_id for lease in known + lost}
    orphans = held - {lease.lease_id for lease in known}
    assert frontier.release("w1", *orphans, other[0].lease_id) == 2
    assert frontier.leases_of("w1") == {lease.lease_id for lease in known}
    assert frontier.leased_by() == {"w1": 2, "w2": 1}
    # Back where they came from: the queue with their priority, the start list.
    assert [entry.data for entry in lease_all(frontier, "w3", 5)] == [b"r1"]
    assert start_list(server, frontier) == [b'{"url": "http://s/"}']
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
    frontier: RedisFrontier, server: redis.Redis, site: str
) -> None:
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


def test_drain_sees_every_partition(server: redis.Redis, site: str) -> None:
    frontier = RedisFrontier.adopt(server, site, 6)
    for i in range(60):
        frontier.push(f"r{i}".encode(), seen_job="j", fingerprint=fp(f"r{i}"))
    frontier.push_start(['{"url": "http://s/"}'])
    beat(server, site, "w1")
    leased = lease_all(frontier, "w1", 4)
    assert {lease_partition(lease.lease_id) for lease in leased} == set(range(6))
    frontier.push(b"late", 2, seen_job="j", fingerprint=fp("late"))
    state = drain_state(server, site, "j")  # a poller that knows no partition count
    assert (state.queued, state.leased, state.drained) == (2, 60, False)
    frontier.ack(*(lease.lease_id for lease in leased[:-1]))
    assert drain_state(server, site, "j").leased == 1
    frontier.ack(leased[-1].lease_id)
    for lease in lease_all(frontier, "w1") + frontier.lease_start("w1", 5):
        frontier.ack(lease.lease_id)
    drain_state(server, site, "j")
    assert drain_state(server, site, "j").drained


def test_drain_reclaims_dead_workers_leases(
    frontier: RedisFrontier, server: redis.Redis, site: str
) -> None:
    frontier.push(b"r")
    frontier.lease("crashed", 1)
    state = drain_state(server, site, "j")
    assert state.reclaimed == 1 and state.queued == 1 and not state.drained


def test_consumer_check_names_the_missing_consumers(server: redis.Redis, site: str) -> None:
    missing = check_consumers(server, site)
    assert not missing.ok
    assert f"{{{site}}}:start_urls" in missing.message()
    assert f"{{{site}}}:queue:*" in missing.message()
    beat(server, site, "w1")
    present = check_consumers(server, site)
    assert present.ok and "w1" in present.message()


def test_push_with_fingerprint_queues_each_url_once(
    frontier: RedisFrontier, server: redis.Redis
) -> None:
    assert frontier.push(b"page", seen_job="job", fingerprint=fp("1"))
    assert not frontier.push(b"page-again", seen_job="job", fingerprint=fp("1"))
    assert frontier.queued() == 1
    # A redirect to an already-seen page still releases the lease it continues.
    (lease,) = frontier.lease("w1", 1)
    assert not frontier.push(
        b"dup", replaces_lease=lease.lease_id, seen_job="job", fingerprint=fp("1")
    )
    assert frontier.leased() == 0 and frontier.queued() == 0
    assert frontier.seen("job", fp("1")) and not frontier.seen("job", fp("2"))
    # The seen-set holds the raw digest: its first 14 bits name the bucket (a key of the
    # fingerprint's partition), the bytes from the second on are the field.
    part = frontier.parts[int.from_bytes(fp("1")[-4:], "big") % frontier.partitions]
    bucket = part.seen("job", f"{int.from_bytes(fp('1')[:2], 'big') >> 2:04x}")
    assert server.hkeys(bucket) == [fp("1")[1:]] and server.ttl(bucket) > 0


def test_push_many_is_each_push_in_order_in_one_call(frontier: RedisFrontier) -> None:
    frontier.push(b"first", seen_job="job", fingerprint=fp("0"))
    (lease,) = frontier.lease("w1", 1)
    queued = frontier.push_many(
        [
            Push(b"a", seen_job="job", fingerprint=fp("1")),
            Push(b"a-again", seen_job="job", fingerprint=fp("1")),  # same batch: seen once
            Push(b"hi", 5, seen_job="job", fingerprint=fp("2")),
            Push(b"seen-before", seen_job="job", fingerprint=fp("0")),
            # A retry of the leased request: its lease is released in the same step.
            Push(b"retry", replaces_lease=lease.lease_id),
            Push(b"b", seen_job="other-job", fingerprint=fp("1")),
        ]
    )
    assert queued == [True, False, True, False, True, True]
    assert frontier.leased() == 0 and frontier.leased_by() == {}
    popped = [lease.data for lease in lease_all(frontier, "w1")]
    assert popped[0] == b"hi" and sorted(popped) == [b"a", b"b", b"hi", b"retry"]
    if frontier.partitions == 1:
        assert popped == [b"hi", b"a", b"retry", b"b"]
    assert frontier.push_many([]) == []
    with pytest.raises(ValueError):
        frontier.push_many([Push(b"x", seen_job="job")])


def redis_ms(server: redis.Redis) -> int:
    seconds, micros = server.time()
    return int(seconds) * 1000 + int(micros) // 1000


def test_dead_workers_leases_return_once_with_their_priorities_in_bounded_batches(
    frontier: RedisFrontier, server: redis.Redis, site: str
) -> None:
    priorities = {f"r{i}".encode(): i % 7 for i in range(1050)}
    for data, priority in priorities.items():
        frontier.push(data, priority)
    beat(server, site, "live")
    live = frontier.lease("live", 50)
    dead = lease_all(frontier, "dead", 1000)  # never heartbeats: due at once
    assert frontier.leased_by() == {"live": len(live), "dead": 1050 - len(live)}

    rounds = []
    while n := frontier.reclaim(batch=100, rounds=1):
        rounds.append(n)
    # Each call bounded by the batch per partition; none lost, none twice.
    assert all(n <= 100 * frontier.partitions for n in rounds) and sum(rounds) == len(dead)
    back = lease_all(frontier, "after", 1000)
    assert sorted(lease.data for lease in back) == sorted(lease.data for lease in dead)
    got = [priorities[lease.data] for lease in back]
    assert got == sorted(got, reverse=True)  # each back at its priority
    # The live worker's leases were not touched; the dead worker left the deadlines.
    assert frontier.leased_by() == {"live": len(live), "after": len(back)}
    assert server.zscore(frontier.keys.worker_deadlines, "dead") is None
    assert frontier.ack(*(lease.lease_id for lease in live + back)) == 1050
    assert frontier.leased_by() == {}


def test_acks_and_replacing_pushes_leave_the_workers_lease_set(
    frontier: RedisFrontier, server: redis.Redis, site: str
) -> None:
    for name in (b"a", b"b", b"c"):
        frontier.push(name)
    beat(server, site, "w1")
    a, b, c = lease_all(frontier, "w1", 3)
    frontier.ack(a.lease_id)
    frontier.push(b"b-retry", replaces_lease=b.lease_id)
    assert frontier.leases_of("w1") == {c.lease_id}
    assert frontier.reclaim(release_worker="w1") == 1
    assert frontier.leases_of("w1") == set()
    assert not any(server.exists(p.worker_leases("w1")) for p in frontier.parts)


def test_release_and_unregister_return_all_of_a_workers_leases(
    frontier: RedisFrontier, server: redis.Redis, site: str
) -> None:
    for i in range(40):
        frontier.push(f"r{i}".encode())
    registry = WorkerRegistry(server, site, ttl=30)
    registry.heartbeat(WorkerInfo(worker_id="closing", site=site))
    registry.heartbeat(WorkerInfo(worker_id="gone", site=site))
    closing = len(lease_all(frontier, "closing", 30))
    frontier.push_many([Push(f"g{i}".encode()) for i in range(10)])
    gone = len(lease_all(frontier, "gone", 10))
    # A clean close releases everything it holds, whatever the batch size.
    assert frontier.reclaim(release_worker="closing", batch=7, rounds=1) == closing == 40
    # An unregistered worker is due at once, though its heartbeat TTL had time left.
    registry.unregister("gone")
    assert frontier.reclaim() == gone
    assert frontier.leased() == 0 and frontier.queued() == 50


def test_liveness_runs_on_redis_clock_not_the_workers(
    frontier: RedisFrontier, server: redis.Redis, site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
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


def test_a_worker_that_leased_before_its_first_heartbeat_is_due_at_once(
    frontier: RedisFrontier, server: redis.Redis
) -> None:
    frontier.push(b"r")
    frontier.lease("never-beat", 1)
    assert server.zscore(frontier.keys.worker_deadlines, "never-beat") is not None
    assert frontier.reclaim() == 1


def test_seen_buckets_and_fields_are_the_whole_digest() -> None:
    """Exact: two digests share a bucket and a field only when they are equal."""
    digests = [fp(str(i)) for i in range(20_000)] + [bytes(20), b"\xff" * 20, b"a", b""]
    assert len({seen_bucket(d) for d in digests}) == len(set(digests))
    shared = [d[:1] + bytes([b]) + d[2:] for d in digests[:50] for b in (0, 1, 2, 3, 255)]
    assert len({seen_bucket(d) for d in shared}) == len(set(shared))


def test_a_frontier_in_the_previous_format_is_refused_in_one_line(
    server: redis.Redis, site: str
) -> None:
    queue, leases = RedisFrontier(server, site).keys.previous_frontier
    server.zadd(queue, {b"\x80\x05pickled": -1})
    with pytest.raises(FrontierLayoutError) as refused:
        RedisFrontier.adopt(server, site, 1)
    message = refused.value.message
    assert "\n" not in message and "1 queued and 0 leased" in message
    assert f"redis-cli DEL {queue} {leases}" in message
    with pytest.raises(FrontierLayoutError):
        RedisFrontier(server, site).join(1)  # a worker refuses it too
    server.delete(queue)
    assert RedisFrontier.adopt(server, site, 1).queued() == 0


def test_the_partition_count_changes_only_while_the_frontier_is_empty(
    server: redis.Redis, site: str
) -> None:
    three = RedisFrontier.adopt(server, site, 3)
    three.push(b"r")
    with pytest.raises(FrontierLayoutError, match="1 queued and 0 leased requests in 3 partition"):
        RedisFrontier.adopt(server, site, 5)
    worker = RedisFrontier(server, site)
    worker.join(1)  # a worker follows the recorded count, whatever its own setting
    assert worker.partitions == 3 and worker.queued() == 1
    for lease in lease_all(worker, "w1"):
        worker.ack(lease.lease_id)
    five = RedisFrontier.adopt(server, site, 5)
    assert five.partitions == 5 and RedisFrontier(server, site).partitions == 5
    worker.refresh()
    assert worker.partitions == 5


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
