"""The scripts compose runs: docker/init_env.py (secrets), docker/healthcheck.py, and
docker/elasticsearch/setup.sh (against a local server standing in for Elasticsearch)."""

from __future__ import annotations

import base64
import json
import os
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.frontier.workers import WorkerInfo, WorkerRegistry
from harness.redis_server import RedisServer
from tests.docker.support import (
    DOCKER_DIR,
    ENV_EXAMPLE,
    REPO_ROOT,
    Recorder,
    env_example_entries,
    interpolate_document,
    load_compose,
    load_module,
)

init_env = load_module(DOCKER_DIR / "init_env.py", "init_env")
HEALTHCHECK = DOCKER_DIR / "healthcheck.py"
SETUP = DOCKER_DIR / "elasticsearch" / "setup.sh"


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    with Recorder.serving() as server:
        yield server


# -- init_env.py -------------------------------------------------------------------------------


def test_init_env_fills_secrets_once_and_keeps_settings(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    argv = ["--env", str(env_file), "--example", str(ENV_EXAMPLE)]
    assert init_env.main(argv) == 0
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    first = init_env.parse_assignments(env_file.read_text())
    for secret in init_env.SECRETS:
        assert len(first[secret]) == 64 and int(first[secret], 16) >= 0, secret
    assert len({first[secret] for secret in init_env.SECRETS}) == len(init_env.SECRETS)
    # Operator changes survive a re-run; nothing is regenerated.
    text = env_file.read_text().replace("WORKER_REPLICAS=1", "WORKER_REPLICAS=4")
    env_file.write_text(text + "MY_OVERRIDE=yes\n")
    assert init_env.main(argv) == 0
    second = init_env.parse_assignments(env_file.read_text())
    assert second["WORKER_REPLICAS"] == "4" and second["MY_OVERRIDE"] == "yes"
    assert {k: second[k] for k in init_env.SECRETS} == {k: first[k] for k in init_env.SECRETS}
    assert env_file.read_text().count("MY_OVERRIDE=") == 1
    # The result is a complete environment for the compose file.
    resolved = interpolate_document(load_compose(), second)
    assert resolved["services"]["redis"]["environment"]["REDISCLI_AUTH"] == first["REDIS_PASSWORD"]
    assert set(env_example_entries()) >= set(init_env.SECRETS)


def test_init_env_prints_no_secret(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    result = subprocess.run(
        [sys.executable, str(DOCKER_DIR / "init_env.py"), "--env", str(env_file)],
        capture_output=True,
        text=True,
        check=True,
    )
    values = init_env.parse_assignments(env_file.read_text())
    for secret in init_env.SECRETS:
        assert values[secret] not in result.stdout + result.stderr
    assert "generated REDIS_PASSWORD" in result.stderr


# -- healthcheck.py ------------------------------------------------------------------------------


def _healthcheck(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    return subprocess.run(
        [sys.executable, str(HEALTHCHECK), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO_ROOT,
        env={**base, "PYTHONPATH": str(REPO_ROOT), **(env or {})},
        timeout=60,
    )


def test_http_healthcheck(recorder: Recorder) -> None:
    recorder.statuses = {"/down": 503}
    assert _healthcheck("http", f"{recorder.url}/api/health").returncode == 0
    down = _healthcheck("http", f"{recorder.url}/down")
    assert down.returncode == 1 and "HTTP 503" in down.stdout
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    assert _healthcheck("http", f"http://127.0.0.1:{closed}/").returncode == 1


def test_worker_healthcheck_wants_a_heartbeat_from_this_host(redis_server: RedisServer) -> None:
    site = "healthsite"
    client = redis_server.client()
    registry = WorkerRegistry(client, site, ttl=30)
    env = {"REDIS_URL": redis_server.url}
    try:
        missing = _healthcheck("worker", site, env=env)
        assert missing.returncode == 1 and "no live heartbeat" in missing.stdout
        registry.heartbeat(WorkerInfo(worker_id="elsewhere-1", site=site, host="other-host"))
        assert _healthcheck("worker", site, env=env).returncode == 1
        registry.heartbeat(WorkerInfo(worker_id="here-1", site=site, host=socket.gethostname()))
        healthy = _healthcheck("worker", site, env=env)
        assert healthy.returncode == 0 and "here-1" in healthy.stdout
        assert _healthcheck("worker", site).returncode == 1  # no REDIS_URL: unhealthy
    finally:
        registry.unregister("elsewhere-1")
        registry.unregister("here-1")


# -- elasticsearch/setup.sh ------------------------------------------------------------------------


def _setup(url: str, **overrides: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "ES_URL": url,
        "ELASTIC_PASSWORD": "e1a571c0ffee",
        "KIBANA_SYSTEM_PASSWORD": "k1bana5y5",
        "PLATFORM_ES_USERNAME": "platform",
        "PLATFORM_ES_PASSWORD": "p1atf0rm",
        "SEARCH_ES_PASSWORD": "5earch",
        "KIBANA_SETUP_PASSWORD": "k1bana5etup",
        "SETUP_WAIT_SECONDS": "10",
        **overrides,
    }
    return subprocess.run(
        ["bash", str(SETUP)], capture_output=True, text=True, env=env, check=False, timeout=60
    )


def test_es_setup_sets_kibana_password_role_and_user(recorder: Recorder) -> None:
    result = _setup(recorder.url)
    assert result.returncode == 0, result.stderr
    calls = [(r["method"], r["path"].split("?")[0]) for r in recorder.requests]
    assert calls == [
        ("GET", "/_cluster/health"),
        ("POST", "/_security/user/kibana_system/_password"),
        ("PUT", "/_security/role/platform_writer"),
        ("PUT", "/_security/user/platform"),
        ("PUT", "/_security/role/platform_reader"),
        ("PUT", "/_security/user/search"),
        ("PUT", "/_security/role/platform_kibana_setup"),
        ("PUT", "/_security/user/kibana_setup"),
    ]
    expected_auth = "Basic " + base64.b64encode(b"elastic:e1a571c0ffee").decode()
    assert all(r["headers"]["Authorization"] == expected_auth for r in recorder.requests)
    bodies = [json.loads(r["body"]) for r in recorder.requests[1:]]
    assert bodies[0] == {"password": "k1bana5y5"}
    platform_indices = {"items-*", "changes-*", "chunks-*", "platform-jobs-*", "jobs"}
    # The writer writes changes-* too (the store's change documents).
    assert set(bodies[1]["indices"][0]["names"]) == platform_indices
    assert {"manage_index_templates", "monitor"} == set(bodies[1]["cluster"])
    assert bodies[2]["password"] == "p1atf0rm" and bodies[2]["roles"] == ["platform_writer"]
    # The search API's role reads, nothing more.
    reader = bodies[3]
    assert reader["cluster"] == ["monitor"]
    assert [set(i["names"]) for i in reader["indices"]] == [platform_indices]
    assert set(reader["indices"][0]["privileges"]) == {"read", "view_index_metadata"}
    assert bodies[4]["password"] == "5earch" and bodies[4]["roles"] == ["platform_reader"]
    # kibana-setup: Kibana's saved objects and reads, no cluster privilege, no superuser.
    kibana = bodies[5]
    assert "cluster" not in kibana
    assert set(kibana["indices"][0]["privileges"]) == {"read", "view_index_metadata"}
    assert {a["application"] for a in kibana["applications"]} == {"kibana-.kibana"}
    assert bodies[6]["password"] == "k1bana5etup"
    assert bodies[6]["roles"] == ["platform_kibana_setup"]
    for secret in ("e1a571c0ffee", "k1bana5y5", "p1atf0rm", "5earch", "k1bana5etup"):
        assert secret not in result.stdout + result.stderr


def test_es_setup_fails_loudly(recorder: Recorder) -> None:
    recorder.statuses = {"/_security/role/platform_writer": 403}
    refused = _setup(recorder.url)
    assert refused.returncode == 1 and "role platform_writer failed with HTTP 403" in refused.stderr
    unsafe = _setup(recorder.url, PLATFORM_ES_PASSWORD='has"quote')
    assert unsafe.returncode == 2 and "PLATFORM_ES_PASSWORD may only contain" in unsafe.stderr
    recorder.default_status = 401  # wrong ELASTIC_PASSWORD: never ready
    waiting = _setup(recorder.url, SETUP_WAIT_SECONDS="1")
    assert waiting.returncode == 1 and "not ready" in waiting.stderr
