"""The scrape flow's local workers (``launch_workers``, as the drain step launches them):
each holds its own site's secrets and no other site's, read from the running process'
environment as the kernel holds it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config import get_settings
from harness.redis_server import RedisServer
from orchestration.scrape_tasks import launch_workers

MARKERS = {
    "ELASTICSEARCH_PASSWORD": "es-pw-marker-1f2e3d",
    "FACEBOOK_SESSION_COOKIES": "c_user=1; xs=fb-marker-4c5b6a",
    "PROXY_LIST": "http://crawler:proxy-marker-7d8e9f@127.0.0.1:9",
    "SLACK_WEBHOOK_URL": "http://127.0.0.1:9/services/T0/B0/slack-marker-0a1b2c",
    "OPENAI_API_KEY": "sk-openai-marker-3d4e5f",
    "PREFECT_API_AUTH_STRING": "prefect:prefect-marker-6a7b8c",
}


@pytest.fixture
def flow_env(
    tmp_path: Path, redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """The flow worker's environment: every site's secrets, the stores' URLs."""
    monkeypatch.setenv("PLATFORM_RUN_DIR", str(tmp_path))
    monkeypatch.setenv("REDIS_URL", redis_server.url)
    monkeypatch.delenv("ELASTICSEARCH_URL", raising=False)
    for name, value in MARKERS.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(entry.split("=", 1) for entry in raw.decode().split("\0") if "=" in entry)


def test_each_site_s_worker_holds_its_own_secrets_only(
    flow_env: None, redis_server: RedisServer
) -> None:
    held: dict[str, dict[str, str]] = {}
    for site in ("facebook_marketplace", "demo"):
        workers = launch_workers(site, f"{site}-envcheck", 1, None)
        workers.start(redis_server.client(), timeout=120)
        try:
            (worker,) = workers.workers
            assert worker.pid is not None
            held[site] = environ_of(worker.pid)
        finally:
            workers.stop()
    for site, environ in held.items():
        # Not a secret: passed as the flow's worker has it.
        assert environ["REDIS_URL"] == redis_server.url, site
        assert environ["PLATFORM_RUN_DIR"] == get_settings().platform_run_dir.as_posix(), site
        assert "PATH" in environ
        # The store's credentials: every worker writes to it.
        assert environ["ELASTICSEARCH_PASSWORD"] == MARKERS["ELASTICSEARCH_PASSWORD"], site
        # The flows' own, and the proxies of sites that need none: no worker here.
        for name in ("SLACK_WEBHOOK_URL", "OPENAI_API_KEY", "PREFECT_API_AUTH_STRING"):
            assert name not in environ, (site, name)
        assert "PROXY_LIST" not in environ, site
    # The session: facebook's worker alone.
    assert (
        held["facebook_marketplace"]["FACEBOOK_SESSION_COOKIES"]
        == (MARKERS["FACEBOOK_SESSION_COOKIES"])
    )
    assert "FACEBOOK_SESSION_COOKIES" not in held["demo"]
    every_value = "\n".join(v for environ in held.values() for v in environ.values())
    for name in ("SLACK_WEBHOOK_URL", "OPENAI_API_KEY", "PROXY_LIST"):
        assert MARKERS[name] not in every_value, name  # not under another name either
