"""Local workers get their configuration as Scrapy settings; secrets stay off argv. The
preflight and the health check name refused Elasticsearch credentials as such."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from core.config import PlatformSettings
from harness.es_auth_gate import EsAuthGate
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from orchestration.clients import crawl_settings
from orchestration.health import check
from orchestration.steps import LocalWorkers, PreflightError, job_id_for, preflight


def test_workers_are_configured_with_scrapy_settings(tmp_path: Path) -> None:
    settings = {"REDIS_URL": "redis://127.0.0.1:6379/0", "ELASTICSEARCH_URL": "http://es:9200"}
    workers = LocalWorkers(
        "demo",
        "demo-1",
        2,
        run_dir=tmp_path,
        env={"ELASTICSEARCH_PASSWORD": "hunter2"},
        settings=settings,
        base_url="http://127.0.0.1:8000",
    )
    argv = workers.argv(2)
    assert argv[argv.index("crawl") + 1] == "demo"
    pairs = list(itertools.pairwise(argv))
    assert ("-a", "job_id=demo-1") in pairs and ("-a", "always_on=true") in pairs
    assert ("-a", "base_url=http://127.0.0.1:8000") in pairs
    assert ("-s", "REDIS_URL=redis://127.0.0.1:6379/0") in pairs
    assert ("-s", "ELASTICSEARCH_URL=http://es:9200") in pairs
    assert ("-s", f"LOG_FILE={tmp_path / 'worker-demo-2.log'}") in pairs
    assert not any("hunter2" in arg for arg in argv)  # the secret travels in env only
    assert workers.env == {"ELASTICSEARCH_PASSWORD": "hunter2"}


def test_crawl_settings_never_carry_a_secret(tmp_path: Path) -> None:
    config = PlatformSettings(
        redis_url="redis://:s3cret@redis:6379/0",  # a password in the URL: env only
        elasticsearch_url="http://es:9200",
        elasticsearch_password="hunter2",
        platform_run_dir=tmp_path,
        demo_site_url="http://127.0.0.1:8000",
    )
    assert crawl_settings(config) == {
        "ELASTICSEARCH_URL": "http://es:9200",
        "PLATFORM_RUN_DIR": str(tmp_path),
        "DEMO_SITE_URL": "http://127.0.0.1:8000",
    }


def test_job_id_is_stable_for_a_flow_run() -> None:
    run_id = "0b6f5a52-1c1e-4e6e-9a57-2f3c4d5e6f70"
    assert job_id_for("demo", run_id) == "demo-0b6f5a521c1e" == job_id_for("demo", run_id)


def test_preflight_and_health_name_refused_credentials(
    es_node: ElasticsearchNode, redis_server: RedisServer, run_dir: Path
) -> None:
    with EsAuthGate(es_node.url, user="platform_writer", password="right", run_dir=run_dir) as gate:
        es = Elasticsearch(gate.url, basic_auth=("platform_writer", "wrong"), max_retries=0)
        expected = (
            f"Elasticsearch refused the credentials (401) of user 'platform_writer' at "
            f"{gate.url}: set ELASTICSEARCH_USERNAME"
        )
        with pytest.raises(PreflightError) as raised:
            preflight("demo", server=redis_server.client(), es=es, require_consumers=False)
        assert f"preflight failed for demo: {expected}" in str(raised.value)
        assert "unreachable" not in str(raised.value) and "wrong" not in str(raised.value)
        report = check(es, server=None, schedules={}, search_api_url="")
        assert [p for p in report.problems if "Elasticsearch" in p] == [
            next(p for p in report.problems if p.startswith(expected))
        ]
        es.close()
