"""No secret in an argv of the local stack or of the workers a flow launches: the stack
comes up (``orchestration.local_stack.up``) and a scrape's local workers start as the
flow's drain step starts them (``orchestration.steps.LocalWorkers`` with the worker's
environment and ``crawl_settings()``), every secret of the platform set to a marker,
while every process below this test is sampled as ``ps`` would show it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config import get_settings
from harness.base import free_port
from harness.loopback_proxy import LoopbackProxy
from orchestration import local_stack
from orchestration.clients import crawl_settings, redis_client
from orchestration.steps import LocalWorkers
from tests.argv import ArgvWatch

MARKERS = {
    "ELASTICSEARCH_USERNAME": "platform",
    "ELASTICSEARCH_PASSWORD": "es-pw-marker-4b5c6d",
    "ELASTICSEARCH_API_KEY": "es-key-marker-7e8f9a",
    "SLACK_WEBHOOK_URL": "http://127.0.0.1:9/services/T0/B0/slack-marker-1a2b3c",
    "OPENAI_API_KEY": "sk-openai-marker-2b3c4d",
    "FACEBOOK_SESSION_COOKIES": "c_user=1; xs=fb-marker-5c6d7e",
}
PROXY_SECRET = "proxy-pw-marker-8d9e0f"


@pytest.fixture
def stack_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A stack of its own (run directory, free ports) in an environment full of secrets."""
    monkeypatch.setenv("PLATFORM_RUN_DIR", str(tmp_path))
    for name in local_stack.PORTS:
        monkeypatch.setenv(local_stack.PORT_VARIABLE.format(name.upper()), str(free_port()))
    for name, value in MARKERS.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    try:
        yield tmp_path
    finally:
        local_stack.down()
        get_settings.cache_clear()


@pytest.mark.e2e
def test_the_local_stack_and_flow_workers_hold_secrets_in_env_only(
    stack_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = [*MARKERS.values(), PROXY_SECRET]
    secrets.remove("platform")
    with ArgvWatch(lambda: [os.getpid()], secrets, interval=0.02) as stack_watch:
        state = local_stack.up()
    with LoopbackProxy(auth=f"crawler:{PROXY_SECRET}", run_dir=stack_env) as proxy:
        # What the flow's worker process holds (docs/orchestration.md): the stack's
        # services, and the proxies with their credentials.
        for name, value in local_stack.client_env(state).items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("PROXY_LIST", proxy.url)
        get_settings.cache_clear()
        workers = LocalWorkers(
            "demo",
            "demo-argvcheck",
            2,
            run_dir=stack_env / "jobs" / "demo-argvcheck",
            env=os.environ,
            settings=crawl_settings(),
            base_url=state["demo_site_url"],
        )
        with ArgvWatch(lambda: [os.getpid()], secrets, interval=0.02) as worker_watch:
            workers.start(redis_client(), timeout=120)
            workers.stop()
    assert stack_watch.leaks() == [] and worker_watch.leaks() == []
    # The sampler saw what it was meant to: every service of the stack, the workers.
    for started in (
        "redis-server",
        "prefect",
        "standins.demo_site",
        "orchestration.register_flows",
    ):
        assert stack_watch.saw(started), started
    assert stack_watch.saw("org.elasticsearch") or stack_watch.saw("es-node")
    assert worker_watch.saw("scrapy") and worker_watch.saw("job_id=demo-argvcheck")
