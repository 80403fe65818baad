"""A worker started while Redis is down waits for it (crawlers.frontier.connect), then crawls."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from scrapy import Spider
from scrapy.settings import Settings

from core.config import OperatorError
from core.frontier.workers import WorkerRegistry
from crawlers import defaults
from crawlers.cli.producer import produce
from crawlers.frontier.connect import (
    ConnectPolicy,
    always_on,
    check_redis,
    failure_reason,
    redis_address,
)
from harness.base import free_port
from harness.demo_site import DemoSite
from harness.redis_server import RedisCluster, RedisServer
from tests.crawlers.support import (
    REPO_ROOT,
    crawl_env,
    log_excerpt,
    settings_argv,
    start_worker,
    wait_for,
)

PRODUCTS = 30
# Quick retries, so that a test sees several attempts within seconds.
FAST = {"FRONTIER_CONNECT_BACKOFF": 0.2, "FRONTIER_CONNECT_BACKOFF_MAX": 1.0}
RETRY_LINE = re.compile(
    r"WARNING: Redis at (\S+) unreachable \((\w+)\); retrying in ([\d.]+)s \(attempt (\d+)\)"
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSite]:
    run_dir = tmp_path_factory.mktemp("connect-site")
    with DemoSite(run_dir=run_dir, products=PRODUCTS, name="connect-site") as server:
        yield server


# -- the policy and the names in messages ---------------------------------------------------


def test_the_wait_doubles_up_to_its_cap_and_only_a_crawl_that_is_not_always_on_gives_up() -> None:
    settings = Settings()
    settings.setmodule(defaults)
    policy = ConnectPolicy.from_settings(settings, always_on=False)
    assert [policy.delay(n) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]
    assert policy.timeout == defaults.FRONTIER_CONNECT_TIMEOUT
    assert ConnectPolicy.from_settings(settings, always_on=True).timeout is None


def test_always_on_argument_wins_over_the_setting() -> None:
    spider = Spider("demo")
    assert always_on(spider, True) and not always_on(spider, False)
    spider.always_on = "true"  # type: ignore[attr-defined]
    assert always_on(spider, False)
    spider.always_on = "no"  # type: ignore[attr-defined]
    assert not always_on(spider, True)


def test_messages_name_redis_by_address_never_by_its_password() -> None:
    assert redis_address("redis://:hunter2@redis:6380/0") == "redis://redis:6380"
    assert redis_address("rediss://user:pw@cache.internal/1") == "rediss://cache.internal:6379"
    assert redis_address("unix:///run/redis.sock?db=0") == "unix:///run/redis.sock"


def test_a_closed_port_fails_a_command_with_one_line_naming_the_cause() -> None:
    url = f"redis://:hunter2@127.0.0.1:{free_port()}/0"
    server = redis.Redis.from_url(url, socket_connect_timeout=1)
    with pytest.raises(OperatorError) as info:
        check_redis(server, redis_address(url), "start Redis")
    address = redis_address(url)
    assert info.value.message == (
        f"Redis at {address} unreachable (ConnectionRefusedError): start Redis"
    )
    with pytest.raises(redis.ConnectionError) as refused:
        server.ping()
    assert failure_reason(refused.value) == "ConnectionRefusedError"  # not the client's wrapper


# -- real workers ---------------------------------------------------------------------------


def test_a_crawl_that_is_not_always_on_gives_up_with_one_line_and_exit_2(tmp_path: Path) -> None:
    url = f"redis://:hunter2@127.0.0.1:{free_port()}/0"
    log = tmp_path / "worker.log"
    settings = {**FAST, "REDIS_URL": url, "FRONTIER_CONNECT_TIMEOUT": 2, "LOG_FILE": str(log)}
    argv = [sys.executable, "-m", "scrapy", "crawl", "demo", *settings_argv(settings)]
    result = subprocess.run(
        argv, cwd=REPO_ROOT, env=crawl_env(), capture_output=True, text=True, timeout=120
    )
    text = log.read_text()
    assert result.returncode == 2, text[-3000:]
    assert (result.stdout, result.stderr) == ("", "")  # everything went to the log
    assert "Traceback" not in text and "hunter2" not in text
    attempts = [int(match[3]) for match in RETRY_LINE.findall(text)]
    assert attempts == list(range(1, len(attempts) + 1)) and len(attempts) >= 2, text[-3000:]
    [gave_up] = [line for line in text.splitlines() if " ERROR: " in line]
    address = redis_address(url)
    assert re.match(
        rf"Redis at {address} unreachable \(ConnectionRefusedError\) for [23]s "
        r"\(FRONTIER_CONNECT_TIMEOUT=2\): start Redis or fix REDIS_URL",
        gave_up.split(" ERROR: ", 1)[1],
    ), gave_up
    # Nothing started: no pipeline opened, no request, no closing stats.
    assert "Crawled 0 pages" not in text and "Spider closed" not in text


def crawl_through_a_late_store(
    site: DemoSite,
    store: RedisServer | RedisCluster,
    log: Path,
    *,
    sink_key: str,
    settings: dict[str, object],
    retries: int,
) -> str:
    """A worker started before ``store`` runs: once it logged ``retries`` retry lines,
    ``store`` starts, a job is produced, the worker registers and crawls every product,
    then stops on SIGTERM with exit 0. The worker's log text."""
    site.reset()
    job_id = f"connect-{uuid.uuid4().hex[:6]}"
    worker = start_worker(
        redis_url=store.url,
        job_id=job_id,
        base_url=site.url,
        sink_key=sink_key,
        log_path=log,
        settings={**FAST, **settings},
        arguments={"always_on": "true"},
    )
    try:
        wait_for(
            lambda: log.exists() and len(RETRY_LINE.findall(log.read_text())) >= retries,
            timeout=90,
            what=f"{retries} retry lines",
        )
        assert worker.poll() is None, log_excerpt(log)
        store.start()
        client = store.client()
        produce(client, "demo", job_id=job_id, base_url=site.url)
        registry = WorkerRegistry(client, "demo")
        wait_for(
            lambda: worker.pid in {info.pid for info in registry.live()},
            timeout=60,
            what="the worker's heartbeat",
        )
        wait_for(lambda: client.llen(sink_key) >= PRODUCTS, timeout=120, what="the crawl")
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0, log_excerpt(log)
    finally:
        if worker.poll() is None:
            worker.kill()
        store.stop()
    text = log.read_text()
    assert "Traceback" not in text and " ERROR: " not in text, log_excerpt(log, 80)
    return text


def test_a_worker_started_before_redis_waits_then_registers_and_crawls(
    site: DemoSite, tmp_path: Path
) -> None:
    store = RedisServer(run_dir=tmp_path)  # its port is chosen; Redis is not running yet
    text = crawl_through_a_late_store(
        site, store, tmp_path / "worker.log", sink_key="items", settings={}, retries=3
    )
    retries = RETRY_LINE.findall(text)
    assert {(address, reason) for address, reason, _, _ in retries} == {
        (f"redis://127.0.0.1:{store.port}", "ConnectionRefusedError")
    }
    assert [int(attempt) for *_, attempt in retries] == list(range(1, len(retries) + 1))
    assert f"Redis at redis://127.0.0.1:{store.port} answers" in text


def test_a_worker_refused_by_redis_exits_2_at_once_with_one_line(tmp_path: Path) -> None:
    with RedisServer(run_dir=tmp_path, password="right-pw") as store:
        url = store.url.replace("right-pw", "wrong-pw")
        log = tmp_path / "worker.log"
        settings = {"REDIS_URL": url, "LOG_FILE": str(log)}
        argv = [sys.executable, "-m", "scrapy", "crawl", "demo", "-a", "always_on=true"]
        result = subprocess.run(
            argv + settings_argv(settings),
            cwd=REPO_ROOT,
            env=crawl_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
    text = log.read_text()
    # Even always-on: waiting would not fix the credentials.
    assert result.returncode == 2, text[-3000:]
    assert "Traceback" not in text and "wrong-pw" not in text and not RETRY_LINE.search(text)
    [refused] = [line for line in text.splitlines() if " ERROR: " in line]
    assert refused.split(" ERROR: ", 1)[1].startswith(
        f"Redis at redis://127.0.0.1:{store.port} refused the credentials (AuthenticationError"
    )
    assert "set its password in REDIS_URL like redis://:password@host:6379/0" in refused


def test_a_worker_whose_redis_cluster_setting_does_not_match_exits_2_with_one_line(
    tmp_path: Path, redis_server: RedisServer, redis_cluster: RedisCluster
) -> None:
    def crawl(settings: dict[str, object]) -> tuple[int, str, str]:
        log = tmp_path / f"{uuid.uuid4().hex}.log"
        argv = [sys.executable, "-m", "scrapy", "crawl", "demo", "-a", "always_on=true"]
        result = subprocess.run(
            argv + settings_argv({**settings, "LOG_FILE": str(log)}),
            cwd=REPO_ROOT,
            env=crawl_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        text = log.read_text() if log.exists() else ""
        assert "Traceback" not in text + result.stderr, text[-3000:]
        return result.returncode, text, result.stderr

    # Found at the first contact, even always-on: waiting would not fix the setting.
    # Not set, but a cluster node:
    code, text, stderr = crawl({"REDIS_URL": redis_cluster.url})
    [error] = [line for line in text.splitlines() if " ERROR: " in line]
    assert (code, stderr) == (2, "") and not RETRY_LINE.search(text)
    assert error.split(" ERROR: ", 1)[1].startswith(
        f"Redis at redis://127.0.0.1:{redis_cluster.nodes[0].port} is a Redis Cluster node "
        "but REDIS_CLUSTER is not set"
    )
    # Set, but a plain Redis (the cluster client cannot start):
    code, text, stderr = crawl({"REDIS_URL": redis_server.url, "REDIS_CLUSTER": True})
    [error] = [line for line in text.splitlines() if " ERROR: " in line]
    assert (code, stderr) == (2, "") and not RETRY_LINE.search(text)
    assert error.split(" ERROR: ", 1)[1] == (
        f"REDIS_CLUSTER is set but Redis at 127.0.0.1:{redis_server.port} is not in cluster "
        "mode: unset REDIS_CLUSTER, or point REDIS_URL at a node of the Redis Cluster "
        "(cluster mode)"
    )


def test_a_worker_started_before_the_redis_cluster_waits_then_crawls(
    site: DemoSite, tmp_path: Path
) -> None:
    cluster = RedisCluster(run_dir=tmp_path)  # ports chosen; no node runs yet
    text = crawl_through_a_late_store(
        site,
        cluster,
        tmp_path / "worker.log",
        sink_key="{demo}:items",
        settings={"REDIS_CLUSTER": True},
        retries=2,
    )
    assert {address for address, *_ in RETRY_LINE.findall(text)} == {
        f"redis://127.0.0.1:{cluster.nodes[0].port}"
    }
    assert f"Redis at redis://127.0.0.1:{cluster.nodes[0].port} answers" in text
