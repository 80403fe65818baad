"""``python -m crawlers.cli.producer``: an operator's mistake is one line, exit 2,
nothing enqueued."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.frontier.queue import RedisFrontier
from crawlers.profiles import profile_sites
from harness.base import free_port
from harness.redis_server import RedisCluster, RedisServer
from tests.crawlers.support import REPO_ROOT, crawl_env

PASSWORD = "right-pw"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A Redis that requires a password (``requirepass``)."""
    with RedisServer(run_dir=tmp_path_factory.mktemp("producer"), password=PASSWORD) as server:
        yield server


def producer(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crawlers.cli.producer", *args],
        cwd=REPO_ROOT,
        env={**crawl_env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    """The mistake's line: exit status 2, nothing on stdout, no traceback."""
    assert (result.returncode, result.stdout) == (2, ""), result.stderr[-2000:]
    [line] = result.stderr.splitlines()
    return line


def test_an_unknown_site_is_named_with_the_known_ones() -> None:
    # Checked first: the Redis URL (a closed port here) is never used.
    closed = f"redis://127.0.0.1:{free_port()}/0"
    line = one_line(producer("nosuchsite", "--redis-url", closed))
    known = ", ".join(profile_sites())  # derived: a new profile needs no edit here
    assert line == f"unknown site 'nosuchsite': known sites are {known}; see crawlers/profiles/"


def test_no_redis_url_and_a_malformed_one_name_the_fix() -> None:
    assert one_line(producer("demo")).startswith(
        "REDIS_URL is not set: the producer enqueues into the Redis frontier; set REDIS_URL"
    )
    assert one_line(producer("demo", "--redis-url", "127.0.0.1:6379")).startswith(
        "configuration error: --redis-url='127.0.0.1:6379' must start with redis://"
    )
    assert one_line(producer("demo", env={"REDIS_URL": "redis://:pw@h:63x9/0"})) == (
        "configuration error: REDIS_URL='redis://:****@h:63x9/0' is not a valid URL: "
        "set REDIS_URL like redis://[:password@]host:6379/0, or unset it"
    )


def test_redis_on_a_closed_port_is_one_line_without_the_password() -> None:
    port = free_port()
    line = one_line(producer("demo", env={"REDIS_URL": f"redis://:{PASSWORD}@127.0.0.1:{port}/0"}))
    assert line == (
        f"Redis at redis://127.0.0.1:{port} unreachable (ConnectionRefusedError): start Redis "
        "or point REDIS_URL (or --redis-url) at it; nothing enqueued"
    )


def test_a_wrong_password_is_one_line_and_enqueues_nothing(guarded: RedisServer) -> None:
    client = guarded.client()
    client.flushdb()
    for url in (guarded.url.replace(PASSWORD, "wrong-pw"), guarded.url.replace(PASSWORD, "")):
        line = one_line(producer("demo", "--redis-url", url))
        assert line.startswith(
            f"Redis at redis://127.0.0.1:{guarded.port} refused the credentials "
            "(AuthenticationError: "
        ), line
        assert line.endswith(": set its password in REDIS_URL like redis://:password@host:6379/0")
        assert "wrong-pw" not in line
    assert client.keys("*") == []


def test_the_right_password_enqueues(guarded: RedisServer) -> None:
    client = guarded.client()
    client.flushdb()
    result = producer(
        "demo", "--job-id", "job-1", "--base-url", "http://127.0.0.1:1", "--redis-url", guarded.url
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("for demo job job-1")
    assert client.get("{demo}:current_job") == b"job-1"


def test_redis_cluster_set_or_not_must_match_the_server(
    redis_server: RedisServer, redis_cluster: RedisCluster
) -> None:
    line = one_line(producer("demo", "--redis-url", redis_cluster.url))
    assert line.startswith(
        f"Redis at redis://127.0.0.1:{redis_cluster.nodes[0].port} is a Redis Cluster node "
        "but REDIS_CLUSTER is not set"
    )
    assert line.endswith(
        "set REDIS_CLUSTER=1 (Scrapy setting REDIS_CLUSTER = True) for a Redis Cluster"
    )
    line = one_line(producer("demo", "--redis-url", redis_server.url, env={"REDIS_CLUSTER": "1"}))
    assert line == (
        f"REDIS_CLUSTER is set but Redis at 127.0.0.1:{redis_server.port} is not in cluster "
        "mode: unset REDIS_CLUSTER, or point REDIS_URL at a node of the Redis Cluster "
        "(cluster mode)"
    )
    assert not redis_server.client().exists("{demo}:start_urls")


def test_a_site_profile_sets_its_frontier_partitions(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    # The flow's producer runs with the project's settings: the site's profile must still
    # decide how many partitions its frontier has, as it decides its workers' settings.
    profiles = tmp_path / "profiles"
    shutil.copytree(REPO_ROOT / "crawlers" / "profiles", profiles)
    demo = profiles / "demo.toml"
    demo.write_text(demo.read_text() + "\n[settings]\nFRONTIER_PARTITIONS = 3\n")
    client = redis_server.client()
    client.flushdb()
    result = producer(
        "demo",
        "--redis-url",
        redis_server.url,
        "--job-id",
        "job-p",
        env={"SITE_PROFILES_DIR": str(profiles)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert RedisFrontier(client, "demo").partitions == 3
    assert RedisFrontier(client, "demo").queued() > 0
    client.flushdb()
