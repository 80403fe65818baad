"""Wrong Elasticsearch credentials: named as such, one line, exit 2, no item lost.

Elasticsearch's security answers (401, 403) come from ``services.es_auth_gate`` in front
of the real node (the harness's node has no security module).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from services.demo_site import DemoSite
from services.es_auth_gate import EsAuthGate
from services.es_node import ElasticsearchNode
from tests.crawlers.pipelines.support import count_docs, start_store_worker
from tests.crawlers.support import log_excerpt

PRODUCTS = 40
USER, PASSWORD = "platform_writer", "right-secret"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSite]:
    run_dir = tmp_path_factory.mktemp("auth-site")
    with DemoSite(run_dir=run_dir, products=PRODUCTS, name="auth-site") as server:
        yield server


@pytest.fixture(scope="module")
def gate(es_node: ElasticsearchNode, run_dir: Path) -> Iterator[EsAuthGate]:
    with EsAuthGate(es_node.url, user=USER, password=PASSWORD, run_dir=run_dir) as server:
        yield server


@pytest.fixture
def clean_es(es: Elasticsearch) -> Iterator[Elasticsearch]:
    def clean() -> None:
        for pattern in ("items-demo-*", "platform-jobs-*"):
            es.indices.delete(index=pattern, ignore_unavailable=True, allow_no_indices=True)

    clean()
    yield es
    clean()


def crawl(
    site: DemoSite, gate: EsAuthGate, password: str, tmp_path: Path, name: str
) -> tuple[int, str, Path]:
    log = tmp_path / f"{name}.log"
    worker = start_store_worker(
        job_id=name,
        base_url=site.url,
        log_path=log,
        redis_url=None,
        es_url=gate.url,
        settings={
            "ELASTICSEARCH_USERNAME": USER,
            "ELASTICSEARCH_PASSWORD": password,
            "PLATFORM_RUN_DIR": str(tmp_path / "run"),
        },
        stderr=subprocess.PIPE,
    )
    _, stderr = worker.communicate(timeout=180)
    return worker.returncode, stderr.decode(), log


def test_wrong_credentials_are_one_line_exit_2_and_the_next_run_stores_everything(
    site: DemoSite, gate: EsAuthGate, clean_es: Elasticsearch, tmp_path: Path
) -> None:
    site.clear_access_log()
    code, stderr, _ = crawl(site, gate, "wrong-secret", tmp_path, "wrong")
    assert code == 2, stderr
    assert stderr.splitlines() == [
        f"demo: Elasticsearch refused the credentials (401) of user '{USER}' at {gate.url}: "
        "set ELASTICSEARCH_USERNAME and ELASTICSEARCH_PASSWORD (or ELASTICSEARCH_API_KEY) "
        "to a user Elasticsearch knows; nothing was crawled"
    ]
    assert "wrong-secret" not in stderr
    assert site.access_log() == []  # nothing fetched: every item is still the next run's
    code, stderr, log = crawl(site, gate, PASSWORD, tmp_path, "right")
    assert code == 0, log_excerpt(log)
    assert count_docs(clean_es) == PRODUCTS
