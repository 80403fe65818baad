"""No secret in any argv of what compose runs: docker/elasticsearch/setup.sh, the
Elasticsearch health check, and Redis's start command and health check, each run here
with marker secrets while every process of its tree is sampled as ``ps`` would show it
(``tests.argv.ArgvWatch``). A slow server keeps each curl alive long enough to be seen."""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from harness.base import free_port
from tests.argv import ArgvWatch
from tests.docker.support import (
    DOCKER_DIR,
    Recorder,
    example_environment,
    interpolate_document,
    load_compose,
)

SETUP = DOCKER_DIR / "elasticsearch" / "setup.sh"
MARKERS = {
    "ELASTIC_PASSWORD": "e1a571c-marker-0a1b2c",
    "KIBANA_SYSTEM_PASSWORD": "k1bana5y5-marker-3d4e5f",
    "PLATFORM_ES_PASSWORD": "p1atf0rm-marker-6a7b8c",
    "SEARCH_ES_PASSWORD": "5earch-marker-9d0e1f",
    "KIBANA_SETUP_PASSWORD": "k1bana5etup-marker-2a3b4c",
}


@pytest.fixture
def slow_recorder() -> Iterator[Recorder]:
    with Recorder.serving() as server:
        server.delay = 0.15
        yield server


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    env = {**example_environment(), "ELASTIC_PASSWORD": MARKERS["ELASTIC_PASSWORD"]}
    return dict(interpolate_document(load_compose(), env)["services"])


def watched(argv: list[str], env: dict[str, str], secrets: list[str]) -> ArgvWatch:
    """Run ``argv`` to a successful end with its process tree watched."""
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with ArgvWatch(lambda: [process.pid], secrets) as watch:
        try:
            _, stderr = process.communicate(timeout=60)
        finally:
            process.kill()
    assert process.returncode == 0, stderr.decode(errors="replace")
    return watch


def test_es_setup_sends_every_password_outside_argv(slow_recorder: Recorder) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "ES_URL": slow_recorder.url,
        "PLATFORM_ES_USERNAME": "platform",
        "SETUP_WAIT_SECONDS": "30",
        **MARKERS,
    }
    watch = watched(["bash", str(SETUP)], env, list(MARKERS.values()))
    assert watch.leaks() == []
    # Every call's curl was seen (8 requests, each its own argv): none ran unsampled.
    curls = [argv for argv in watch.argvs if argv[0] == "curl"]
    assert len(curls) == len(slow_recorder.requests) == 8, sorted(watch.argvs)
    # ... and the passwords did reach Elasticsearch, in the bodies and the credentials.
    bodies = b"".join(request["body"] for request in slow_recorder.requests)
    for name in ("KIBANA_SYSTEM_PASSWORD", "PLATFORM_ES_PASSWORD", "SEARCH_ES_PASSWORD"):
        assert MARKERS[name].encode() in bodies, name
    basic = "Basic " + base64.b64encode(f"elastic:{MARKERS['ELASTIC_PASSWORD']}".encode()).decode()
    assert {request["headers"]["Authorization"] for request in slow_recorder.requests} == {basic}


def test_the_elasticsearch_health_check_keeps_the_password_off_argv(
    services: dict[str, Any], slow_recorder: Recorder
) -> None:
    kind, command = services["elasticsearch"]["healthcheck"]["test"]
    assert kind == "CMD-SHELL" and "http://localhost:9200/" in command
    command = command.replace("http://localhost:9200/", f"{slow_recorder.url}/")
    env = {"PATH": os.environ["PATH"], "ELASTIC_PASSWORD": MARKERS["ELASTIC_PASSWORD"]}
    watch = watched(["sh", "-c", command], env, [MARKERS["ELASTIC_PASSWORD"]])
    assert watch.leaks() == []
    assert watch.saw("curl")
    [request] = slow_recorder.requests
    assert request["path"].startswith("/_cluster/health?wait_for_status=yellow")
    basic = "Basic " + base64.b64encode(f"elastic:{MARKERS['ELASTIC_PASSWORD']}".encode()).decode()
    assert request["headers"]["Authorization"] == basic


@pytest.mark.integration  # a real redis-server
def test_redis_gets_its_password_outside_argv(services: dict[str, Any], tmp_path: Path) -> None:
    """Redis's own start command (its password into a config file by the shell's printf)
    and its health check (``REDISCLI_AUTH``), on a free port and a temp directory."""
    password = "r3d1s-marker-5e6f7a"
    port = free_port()
    start = services["redis"]["command"]
    assert start[:2] == ["sh", "-c"]
    script = start[2].replace("/tmp/redis-auth.conf", str(tmp_path / "redis-auth.conf"))
    script += f" --port {port} --bind 127.0.0.1 --dir {tmp_path}"
    env = {"PATH": os.environ["PATH"], "REDISCLI_AUTH": password}
    server = subprocess.Popen(
        ["sh", "-c", script], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        with ArgvWatch(lambda: [server.pid], [password]) as watch:
            _wait_for_port(port)
            kind, check = services["redis"]["healthcheck"]["test"]
            assert kind == "CMD-SHELL" and check.startswith("redis-cli ")
            check = check.replace("redis-cli ", f"redis-cli -p {port} ", 1)
            health = subprocess.Popen(["sh", "-c", check], env=env)
            with ArgvWatch(lambda: [health.pid], [password]) as health_watch:
                assert health.wait(timeout=30) == 0  # PONG: the password reached redis-cli
        assert watch.leaks() == [] and health_watch.leaks() == []
        assert watch.saw("redis-server")
        # The password is required: without it the server refuses.
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=port, socket_timeout=5).ping()
        assert redis.Redis(port=port, password=password, socket_timeout=5).ping()
    finally:
        server.kill()
        server.wait(timeout=30)


def _wait_for_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"redis-server did not listen on {port} in {timeout:g}s")
