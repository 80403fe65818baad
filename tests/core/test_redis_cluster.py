"""The Redis state of the platform on a real Redis Cluster of three masters: frontier,
dedup, the ledger, job stats, worker registry, drain and the store's spill, for sites
whose hash tags put them on different masters (every key of a site in one slot)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator, Sequence

import pytest
import redis.cluster

from core.dedup.detector import ChangeDetector, job_changes, stored_state
from core.figures.ledger import JobLedger, job_figures
from core.figures.stats import JobStats
from core.frontier.drain import drain_state
from core.frontier.queue import RedisFrontier
from core.frontier.workers import WorkerInfo, WorkerRegistry, check_consumers
from core.jobs.index import job_counters
from core.keys import SiteKeys
from core.redis_client import connect, connect_async, is_cluster
from core.store import RedisSpill, StoreAction, spill_size
from harness.redis_server import RedisCluster


@pytest.fixture
def cluster(redis_cluster: RedisCluster) -> Iterator[redis.cluster.RedisCluster]:
    client = connect(redis_cluster.url, cluster=True)
    assert isinstance(client, redis.cluster.RedisCluster)
    yield client
    client.close()


@pytest.fixture
def sites(cluster: redis.cluster.RedisCluster) -> list[str]:
    """Three fresh site names, each on another master (by its hash tag's slot)."""
    found: dict[int, str] = {}
    while len(found) < 3:
        site = f"s{uuid.uuid4().hex[:8]}"
        found.setdefault(cluster.get_node_from_key(SiteKeys(site).jobs).port, site)
    return list(found.values())


def master_of(cluster: redis.cluster.RedisCluster, site: str) -> int:
    return int(cluster.get_node_from_key(SiteKeys(site).jobs).port)


def test_every_key_of_a_site_is_in_one_slot_and_sites_spread(
    cluster: redis.cluster.RedisCluster, sites: list[str]
) -> None:
    for site in sites:
        k = SiteKeys(site)
        p = k.partition(0, 1)  # one partition: the frontier stays in the site's slot
        names = [
            p.start_urls, p.priorities, p.queue(0), p.leases, p.lease_priorities,
            p.lease_owners, p.lease_seq, p.worker_leases("w1"), p.seen("j", "ab12"),
            k.frontier_partitions, k.worker_prefix + "w1", k.workers, k.stats("j"),
            k.current_job, k.jobs, k.drain_probe("j"), k.item_hashes, k.item_first_seen,
            k.item_last_changed, k.job_verdicts("j"), k.job_new("j"), k.job_changed("j"),
            k.job_stored("j"), k.job_invalid("j"), k.job_incomplete("j"), k.job_responses("j"),
            k.store_spill, k.store_spill_lock, k.store_dead_letters,
        ]  # fmt: skip
        assert len({cluster.keyslot(name) for name in names}) == 1, site
    assert len({master_of(cluster, site) for site in sites}) == 3


def test_frontier_workers_stats_and_drain_on_three_masters(
    cluster: redis.cluster.RedisCluster, sites: list[str]
) -> None:
    for site in sites:
        frontier = RedisFrontier(cluster, site)
        assert frontier.push(b"a", 0, seen_job="j1", fingerprint=b"fa")
        assert not frontier.push(b"a-again", 0, seen_job="j1", fingerprint=b"fa")
        frontier.push(b"hi", 5)
        assert frontier.push_start(['{"url": "http://x/"}']) == 1
        assert frontier.queued() == 3

        leases = frontier.lease("w1", 2)
        assert [lease.data for lease in leases] == [b"hi", b"a"]
        # A retry of a leased request replaces its lease in one step (push_and_ack).
        assert frontier.push(b"hi-retry", 5, replaces_lease=leases[0].lease_id)
        assert frontier.ack(leases[1].lease_id) == 1
        (start,) = frontier.lease_start("w1", 1)
        assert start.is_start and frontier.leased_by() == {"w1": 1}

        registry = WorkerRegistry(cluster, site, ttl=5)
        registry.heartbeat(WorkerInfo(worker_id="w1", site=site, idle=True))
        assert [w.worker_id for w in registry.live()] == ["w1"]
        assert check_consumers(cluster, site).ok
        # The worker leaves: its start lease goes back to the start list.
        registry.unregister("w1")
        assert frontier.reclaim(release_worker="w1") == 1 and frontier.leased() == 0
        assert frontier.queued() == 2  # hi-retry + the start entry

        JobStats(cluster, site).add("j1", {"item_scraped_count": 2, "x": 1})
        JobStats(cluster, site).add("j1", {"item_scraped_count": 1})
        assert JobStats(cluster, site).get("j1") == {"item_scraped_count": 3, "x": 1}

        state = drain_state(cluster, site, "j1")
        assert (state.queued, state.leased, state.drained) == (2, 0, False)
        for lease in frontier.lease("w2", 10) + frontier.lease_start("w2", 10):
            frontier.ack(lease.lease_id)
        drain_state(cluster, site, "j1")
        state = drain_state(cluster, site, "j1", stable_window=0.0)
        assert (state.queued, state.leased, state.drained) == (0, 0, True)


def test_one_sites_partitions_spread_evenly_over_the_masters(
    cluster: redis.cluster.RedisCluster,
) -> None:
    """Each partition's keys share one slot (its scripts run there); the partitions'
    slots fall in equal ranges, so 6 partitions put 2 on each of the 3 masters."""
    site = f"s{uuid.uuid4().hex[:8]}"
    keys = SiteKeys(site)
    masters: dict[int, int] = {}
    for i in range(6):
        p = keys.partition(i, 6)
        names = [p.start_urls, p.priorities, p.queue(3), p.leases, p.lease_priorities]
        names += [p.lease_owners, p.lease_seq, p.worker_leases("w"), p.seen("j", "00ff")]
        assert len({cluster.keyslot(name) for name in names}) == 1
        port = int(cluster.get_node_from_key(p.leases).port)
        masters[port] = masters.get(port, 0) + 1
    assert sorted(masters.values()) == [2, 2, 2]

    frontier = RedisFrontier.adopt(cluster, site, 6)
    for i in range(600):
        assert frontier.push(f"r{i}".encode(), i % 3, seen_job="j", fingerprint=f"f{i}".encode())
    assert frontier.queued() == 600
    held: list[str] = []
    while leases := frontier.lease("w1", 50):
        held += [lease.lease_id for lease in leases]
    assert len(held) == 600 and frontier.leased_by() == {"w1": 600}
    assert frontier.reclaim(release_worker="w1") == 600
    state = drain_state(cluster, site, "j")
    assert (state.queued, state.leased) == (600, 0)


def classify_all(
    url: str, site: str, job: str, entries: Sequence[tuple[str, str]], *, incomplete: str = ""
) -> list[str]:
    """Classify ``(key, hash)`` pairs concurrently (one coalesced batch) on the cluster."""

    async def main() -> list[str]:
        client = connect_async(url, cluster=True)
        assert is_cluster(client)
        detector = ChangeDetector(client, site)
        try:
            states = await asyncio.gather(
                *(
                    detector.classify(
                        job, key, digest, incomplete=[incomplete] if incomplete else []
                    )
                    for key, digest in entries
                )
            )
            ledger = JobLedger(client, site)
            await ledger.stored((job, key) for key, _ in entries)
            await ledger.invalid(job, "http://x/bad", "missing price")
            await ledger.responses(job, [("fp1:0", "captcha"), ("fp2:0", "ok:r")])
            await ledger.session_events(job, [("created:s1", "1"), ("retired:s1", "captcha")])
        finally:
            await client.aclose()
        return [state.verdict for state in states]

    return asyncio.run(main())


def test_dedup_and_the_ledger_on_three_masters(
    redis_cluster: RedisCluster, cluster: redis.cluster.RedisCluster, sites: list[str]
) -> None:
    for site in sites:
        items = [(f"{site}:product:{n}", f"h{n}") for n in range(300)]
        assert classify_all(redis_cluster.url, site, "j1", items) == ["new"] * 300
        again = items[:100] + [(key, "changed") for key, _ in items[100:110]]
        verdicts = classify_all(redis_cluster.url, site, "j2", again, incomplete="images")
        assert verdicts == ["unchanged"] * 100 + ["changed"] * 10

        changes = job_changes(cluster, site, "j2")
        assert changes.new == set() and changes.changed == {key for key, _ in again[100:]}
        assert changes.counts == {"new": 0, "changed": 10, "unchanged": 100}
        digest, first, last_changed = stored_state(cluster, site, items[100][0]) or ("", 0, 0)
        assert digest == "changed" and last_changed >= first > 0

        figures = job_figures(cluster, site, "j2")
        assert figures["items/scraped"] == 110 and figures["items/stored"] == 110
        assert (figures["items/invalid"], figures["blocks/total"]) == (1, 1)
        assert (figures["blocks/captcha"], figures["pages/total"], figures["pages/rendered"]) == (
            1,
            2,
            1,
        )
        assert (figures["pages/refused"], figures["sessions/retired/captcha"]) == (1, 1)
        assert figures["items/incomplete"] == 110
        assert job_counters(cluster, site, "j1")["items/new"] == 300


def action(site: str, n: int) -> StoreAction:
    return StoreAction(
        key=f"{site}:product:{n}",
        site=site,
        item_type="product",
        doc_id=f"{site}:product:{n}",
        index=f"items-{site}",
        version=n,
        document={"n": n},
    )


def test_store_spill_on_three_masters(
    redis_cluster: RedisCluster, cluster: redis.cluster.RedisCluster, sites: list[str]
) -> None:
    sent: dict[str, list[str]] = {}

    async def main(site: str) -> tuple[int, int, int, int]:
        client = connect_async(redis_cluster.url, cluster=True, max_connections=2)
        try:
            spill = RedisSpill(client, site, lock_timeout=3)
            await spill.push([action(site, n) for n in range(20)])
            await client.rpush(SiteKeys(site).store_spill, b"not json")

            async def refuse_two(actions: Sequence[StoreAction]) -> list[StoreAction]:
                sent.setdefault(site, []).extend(a.key for a in actions)
                return list(actions[:2])  # Elasticsearch keeps refusing these two

            first = await spill.drain(refuse_two, batch=100)
            left = await spill.size()

            async def accept(actions: Sequence[StoreAction]) -> list[StoreAction]:
                sent.setdefault(site, []).extend(a.key for a in actions)
                return []

            second = await spill.drain(accept, batch=100)
            return first, left, second, await spill.size()
        finally:
            await client.aclose()

    for site in sites:
        assert asyncio.run(main(site)) == (19, 2, 2, 0)
        assert spill_size(cluster, site) == 0
        assert cluster.llen(SiteKeys(site).store_dead_letters) == 1  # the undecodable one
        assert len(sent[site]) == 22
