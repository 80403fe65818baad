"""Real ``scrapy crawl`` workers on the real Redis frontier against the demo site."""

from __future__ import annotations

import re
import signal
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis
from scrapy.settings import Settings
from scrapy.utils.project import get_project_settings

from core.figures.stats import JobStats
from core.frontier.drain import drain_state
from core.frontier.queue import RedisFrontier
from core.frontier.workers import WorkerRegistry
from crawlers.cli.producer import produce
from crawlers.frontier import codec
from harness.demo_site import DemoSite
from harness.redis_server import RedisServer
from standins.demo_site.catalog import build_catalog
from tests.crawlers.support import (
    NO_DEATHS,
    kill_holding_leases,
    log_excerpt,
    start_worker,
    start_workers,
    sunk_items,
    wait_all,
    wait_for,
)

# Long end-to-end cases (whole crawls in subprocesses, most with a fault injected
# mid-crawl): `make test-e2e`.
pytestmark = pytest.mark.e2e

PRODUCTS = 240
PAGE_PREFIXES = ("/product/", "/api/products/", "/category/")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSite]:
    run_dir = tmp_path_factory.mktemp("frontier-site")
    with DemoSite(run_dir=run_dir, products=PRODUCTS, name="frontier-site") as server:
        yield server


@pytest.fixture
def fresh(site: DemoSite, redis_server: RedisServer) -> Iterator[redis.Redis]:
    site.reset()
    client = redis_server.client()
    client.flushdb()
    yield client
    client.flushdb()


@pytest.fixture(scope="module")
def all_skus() -> set[str]:
    return {product.sku for product in build_catalog(n_products=PRODUCTS).products}


def page_hits(site: DemoSite) -> Counter[str]:
    return Counter(
        entry["path"] for entry in site.access_log() if entry["path"].startswith(PAGE_PREFIXES)
    )


def partitioned(n: int) -> Settings:
    """The project's settings with the site's frontier in ``n`` partitions: the producer
    records the count, the workers follow it."""
    settings = get_project_settings()
    settings.set("FRONTIER_PARTITIONS", n)
    return settings


@pytest.mark.parametrize("partitions", [1, 3])
def test_two_workers_share_the_frontier_and_fetch_each_page_once_lost_lease_replies_included(
    site: DemoSite,
    fresh: redis.Redis,
    redis_server: RedisServer,
    all_skus: set[str],
    tmp_path: Path,
    partitions: int,
) -> None:
    job = produce(fresh, "demo", base_url=site.url, settings=partitioned(partitions))
    assert RedisFrontier(fresh, "demo").partitions == partitions
    workers, logs = start_workers(
        2,
        tmp_path,
        redis_url=redis_server.url,
        job_id=job.job_id,
        base_url=site.url,
        sink_key="items",
        # Else the other worker may reclaim the lost leases before their owner finds them.
        settings=NO_DEATHS,
    )
    # Leases Redis grants a worker by a call whose reply is lost (the connection broke
    # mid-call): held in Redis, unknown to the worker. It must put them back, or the
    # frontier never drains and no worker ever closes.
    frontier = RedisFrontier(fresh, "demo")
    registry = WorkerRegistry(fresh, "demo")
    # A worker that has sent its heartbeat (before it, another worker may take it for
    # dead and reclaim its leases), while the queue still holds work.
    wait_for(
        lambda: bool(registry.live()) and frontier.queued() >= 3,
        timeout=60,
        what="a live worker and a full queue",
    )
    owner = registry.live()[0].worker_id
    lost = frontier.lease(owner, 3)
    # One call leases from one partition, which may hold fewer than 3.
    while len(lost) < 3 and frontier.queued():
        lost += frontier.lease(owner, 3 - len(lost))
    lost_paths = {urlsplit(codec.decode(lease.data)["url"]).path for lease in lost}
    assert wait_all(workers, timeout=180) == [0, 0], log_excerpt(logs[0])

    items = sunk_items(fresh, "items")
    assert Counter(item["sku"] for item in items) == Counter(all_skus)
    assert {item["job_id"] for item in items} == {job.job_id}
    hits = page_hits(site)
    assert [path for path, n in hits.items() if n > 1] == []
    assert sum(1 for path in hits if path.startswith("/product/")) == PRODUCTS
    assert all(hits[path] == 1 for path in lost_paths), lost_paths
    stats = JobStats(fresh, "demo").get(job.job_id)
    assert stats["item_scraped_count"] == PRODUCTS
    assert stats["frontier/acked"] == sum(hits.values()) + 1  # + the home page
    assert stats["frontier/orphan_leases_released"] == len(lost) == 3
    # Both workers took part.
    per_worker = [re.findall(r"'item_scraped_count': (\d+)", log.read_text()) for log in logs]
    assert all(found and int(found[-1]) > 0 for found in per_worker), per_worker
    final = drain_state(fresh, "demo", job.job_id)
    assert (final.queued, final.leased, final.workers) == (0, 0, [])


@pytest.mark.parametrize("retry_times", [2, 0])
def test_an_item_that_failed_in_the_pipelines_is_crawled_again_not_acked(
    site: DemoSite,
    fresh: redis.Redis,
    redis_server: RedisServer,
    all_skus: set[str],
    tmp_path: Path,
    retry_times: int,
) -> None:
    job = produce(fresh, "demo", base_url=site.url)
    log = tmp_path / "worker.log"
    pipelines = {
        "tests.crawlers.support.FailOncePipeline": 50,
        "tests.crawlers.support.RedisItemSink": 100,
    }
    worker = start_worker(
        redis_url=redis_server.url,
        job_id=job.job_id,
        base_url=site.url,
        sink_key="items",
        log_path=log,
        settings={"ITEM_PIPELINES": pipelines, "FRONTIER_ITEM_RETRY_TIMES": retry_times},
    )
    # Nothing stored at all (every item given up) is never success: exit 4.
    assert wait_all([worker], timeout=180) == [0 if retry_times else 4], log_excerpt(log)
    stats = JobStats(fresh, "demo").get(job.job_id)
    hits = page_hits(site)
    # The item comes from the reviews API response: that request alone is crawled again.
    api_hits = [n for path, n in hits.items() if path.startswith("/api/products/")]
    assert {n for path, n in hits.items() if path.startswith("/product/")} == {1}
    items = sunk_items(fresh, "items")
    if retry_times:
        # Every product failed once: each request was queued again in place of its lease
        # (never acked with its item lost), and the second crawl stored it.
        assert Counter(item["sku"] for item in items) == Counter(all_skus)
        assert stats["frontier/item_error_recrawled"] == PRODUCTS
        assert stats.get("frontier/item_error_gave_up", 0) == 0
        assert (len(api_hits), set(api_hits)) == (PRODUCTS, {2})
    else:
        # No retries allowed: each failure is given up on, counted, and the job drains.
        assert items == []
        assert (
            log.read_text()
            .splitlines()[-1]
            .endswith(
                f"finish_reason nothing_stored: 0 items stored: {PRODUCTS} failed in the "
                "pipelines (item_error, see the log)"
            )
        )
        assert stats["frontier/item_error_gave_up"] == PRODUCTS
        assert stats.get("frontier/item_error_recrawled", 0) == 0
        assert (len(api_hits), set(api_hits)) == (PRODUCTS, {1})
    final = drain_state(fresh, "demo", job.job_id)
    assert (final.queued, final.leased, final.workers) == (0, 0, [])


@pytest.mark.parametrize("partitions", [1, 3])
def test_sigkilled_worker_loses_no_page(
    site: DemoSite,
    fresh: redis.Redis,
    redis_server: RedisServer,
    all_skus: set[str],
    tmp_path: Path,
    partitions: int,
) -> None:
    # Slow product pages keep requests in flight, so the victim dies holding leases.
    site.control(slow={"rate": 1.0, "ms": 150, "paths": ["/product/"]})
    job = produce(fresh, "demo", base_url=site.url, settings=partitioned(partitions))
    workers, logs = start_workers(
        2,
        tmp_path,
        redis_url=redis_server.url,
        job_id=job.job_id,
        base_url=site.url,
        sink_key="items",
    )
    held = kill_holding_leases(
        fresh, "demo", workers[0], leases=4, also=lambda: fresh.llen("items") >= 20, timeout=60
    )

    assert wait_all(workers[1:], timeout=240) == [0], log_excerpt(logs[1])
    items = sunk_items(fresh, "items")
    # Nothing lost. (An item stored just before the kill may come again: its request
    # was not acked yet, so it was re-crawled; the store's deterministic ids absorb that.)
    assert {item["sku"] for item in items} == all_skus
    stats = JobStats(fresh, "demo").get(job.job_id)
    assert stats.get("frontier/reclaimed_leases", 0) >= 1, (held, stats)
    state = drain_state(fresh, "demo", job.job_id)
    assert (state.queued, state.leased) == (0, 0)


def test_drain_is_reported_only_after_the_last_in_flight_request(
    site: DemoSite,
    fresh: redis.Redis,
    redis_server: RedisServer,
    all_skus: set[str],
    tmp_path: Path,
) -> None:
    last_sku = sorted(all_skus)[-1]
    # One product page is very slow: the crawl's tail is a single in-flight request.
    site.control(slow={"rate": 1.0, "ms": 4000, "paths": [f"/product/{last_sku}"]})
    job = produce(fresh, "demo", base_url=site.url)
    log = tmp_path / "worker.log"
    worker = start_worker(
        redis_url=redis_server.url,
        job_id=job.job_id,
        base_url=site.url,
        sink_key="items",
        log_path=log,
        settings={"FRONTIER_IDLE_CLOSE_SECONDS": 30},
    )
    saw_in_flight_tail = False
    drained_at_items: int | None = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        state = drain_state(fresh, "demo", job.job_id, stable_window=1.0)
        if state.queued == 0 and state.leased >= 1 and fresh.llen("items") >= PRODUCTS - 1:
            saw_in_flight_tail = True
        if state.drained:
            drained_at_items = fresh.llen("items")
            assert state.workers and all(w.idle for w in state.workers)
            break
        time.sleep(0.2)
    assert saw_in_flight_tail, "never observed the slow request in flight at the tail"
    assert drained_at_items == PRODUCTS, log_excerpt(log)
    # The worker runs on: drained is not "closed". It closes after its idle time.
    assert worker.poll() is None
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=60) == 0


def test_idle_worker_closes_after_idle_time_and_always_on_does_not(
    site: DemoSite, fresh: redis.Redis, redis_server: RedisServer, tmp_path: Path
) -> None:
    job_id = f"idle-{uuid.uuid4().hex[:6]}"
    common = {
        "redis_url": redis_server.url,
        "job_id": job_id,
        "base_url": site.url,
        "sink_key": "items",
    }
    closing = start_worker(**common, log_path=tmp_path / "closing.log")
    always_on = start_worker(
        **common, log_path=tmp_path / "always-on.log", arguments={"always_on": "true"}
    )
    started = time.monotonic()
    # Nothing was enqueued: the job stored nothing, which is never success (exit 4).
    assert closing.wait(timeout=60) == 4
    idle_for = time.monotonic() - started
    # 2 s idle limit; Scrapy checks idleness on its 5 s heartbeat, start-up adds a few.
    assert 2 <= idle_for < 20, idle_for
    assert "closing: idle for" in (tmp_path / "closing.log").read_text()
    time.sleep(6)
    assert always_on.poll() is None, "an always-on worker must not close when idle"
    always_on.send_signal(signal.SIGTERM)
    assert always_on.wait(timeout=60) == 4
    endings = {"closing": "", "always-on": "; the crawl ended early (shutdown)"}
    for name, ending in endings.items():
        last = (tmp_path / f"{name}.log").read_text().splitlines()[-1]
        assert last.endswith(
            "finish_reason nothing_stored: 0 items: no request was made (no start URL, or "
            f"nothing enqueued for the job?){ending}"
        )


def test_workers_ride_out_a_redis_restart(
    site: DemoSite, all_skus: set[str], tmp_path: Path
) -> None:
    data_dir = tmp_path / "redis-data"
    store = RedisServer(run_dir=tmp_path, persistent=True, data_dir=data_dir).start()
    port = store.port
    try:
        site.reset()
        site.control(slow={"rate": 1.0, "ms": 100, "paths": ["/product/"]})
        client = store.client()
        job = produce(client, "demo", base_url=site.url)
        workers, logs = start_workers(
            2,
            tmp_path,
            redis_url=store.url,
            job_id=job.job_id,
            base_url=site.url,
            sink_key="items",
            settings={"FRONTIER_IDLE_CLOSE_SECONDS": 5},
        )
        wait_for(lambda: client.llen("items") >= 40, timeout=60, what="the crawl to get going")
        before_outage = client.llen("items")
        store.stop()  # a graceful restart: AOF flushed, as `docker compose restart redis`
        time.sleep(3)
        store = RedisServer(run_dir=tmp_path, port=port, persistent=True, data_dir=data_dir).start()
        client = store.client()
        assert wait_all(workers, timeout=240) == [0, 0], log_excerpt(logs[0])
        assert {item["sku"] for item in sunk_items(client, "items")} == all_skus
        # The outage really hit a running crawl: it was far from done, the workers lived on.
        assert before_outage < PRODUCTS
        assert all(worker.returncode == 0 for worker in workers)
        state = drain_state(client, "demo", job.job_id)
        assert (state.queued, state.leased) == (0, 0)
    finally:
        store.stop()
