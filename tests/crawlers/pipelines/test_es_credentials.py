"""Wrong Elasticsearch credentials: named as such, one line, exit 2, no item lost.

Elasticsearch's security answers (401, 403) come from ``harness.es_auth_gate`` in front
of the real node (the harness's node has no security module).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from core.store import spill_size
from crawlers.cli.producer import produce
from harness.demo_site import DemoSite
from harness.es_auth_gate import EsAuthGate
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from tests.crawlers.pipelines.support import (
    count_docs,
    module_site,
    reset_store,
    start_store_worker,
)
from tests.crawlers.support import log_excerpt, wait_all

# Long end-to-end cases (whole crawls in subprocesses, most with a fault injected
# mid-crawl): `make test-e2e`.
pytestmark = pytest.mark.e2e

PRODUCTS = 40
USER, PASSWORD = "platform_writer", "right-secret"


site = module_site("auth-site", PRODUCTS)


@pytest.fixture(scope="module")
def gate(es_node: ElasticsearchNode, run_dir: Path) -> Iterator[EsAuthGate]:
    with EsAuthGate(es_node.url, user=USER, password=PASSWORD, run_dir=run_dir) as server:
        yield server


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


def test_credentials_refused_mid_crawl_close_it_and_the_spill_keeps_every_item(
    site: DemoSite,
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    es: Elasticsearch,
    run_dir: Path,
    tmp_path: Path,
) -> None:
    server = redis_server.client()
    reset_store(es, server)
    # The password "changes" right after the crawl's own check: every write is refused.
    with EsAuthGate(
        es_node.url, user=USER, password=PASSWORD, refuse_after=1, run_dir=run_dir
    ) as rotated:
        job = produce(server, "demo", base_url=site.url)
        log = tmp_path / "refused.log"
        worker = start_store_worker(
            job_id=job.job_id,
            base_url=site.url,
            log_path=log,
            redis_url=redis_server.url,
            es_url=rotated.url,
            settings={"ELASTICSEARCH_USERNAME": USER, "ELASTICSEARCH_PASSWORD": PASSWORD},
        )
        assert wait_all([worker], timeout=120) == [2], log_excerpt(log)
    text = log.read_text()
    line = (
        f"Elasticsearch refused the credentials (401) of user '{USER}' at {rotated.url}: "
        "set ELASTICSEARCH_USERNAME and ELASTICSEARCH_PASSWORD (or ELASTICSEARCH_API_KEY) "
        "to a user Elasticsearch knows; closing the crawl, scraped items wait in the spill"
    )
    assert text.count(line) == 1, log_excerpt(log)
    assert "Traceback" not in text and PASSWORD not in text
    assert "'finish_reason': 'elasticsearch_auth'" in text
    assert count_docs(es) == 0
    # The next run, with credentials Elasticsearch takes: the spill and the frontier's
    # remaining requests give every item.
    with EsAuthGate(es_node.url, user=USER, password=PASSWORD, run_dir=run_dir) as gate:
        log = tmp_path / "next.log"
        worker = start_store_worker(
            job_id=job.job_id,
            base_url=site.url,
            log_path=log,
            redis_url=redis_server.url,
            es_url=gate.url,
            settings={"ELASTICSEARCH_USERNAME": USER, "ELASTICSEARCH_PASSWORD": PASSWORD},
        )
        assert wait_all([worker], timeout=180) == [0], log_excerpt(log)
    assert count_docs(es) == PRODUCTS
    assert spill_size(server, "demo") == 0
    reset_store(es, server)


def test_credentials_refused_mid_crawl_in_local_mode_are_one_line_not_one_per_item(
    site: DemoSite,
    es_node: ElasticsearchNode,
    clean_es: Elasticsearch,
    run_dir: Path,
    tmp_path: Path,
) -> None:
    # Without Redis dedup reads its state from Elasticsearch: refused there first.
    with EsAuthGate(
        es_node.url, user=USER, password=PASSWORD, refuse_after=1, run_dir=run_dir
    ) as rotated:
        code, _, log = crawl(site, rotated, PASSWORD, tmp_path, "local-refused")
    assert code == 2, log_excerpt(log)
    text = log.read_text()
    errors = [line for line in text.splitlines() if "] ERROR: " in line]
    refused = [line for line in errors if "Elasticsearch refused the credentials (401)" in line]
    assert len(refused) == 1, errors
    assert refused[0].endswith("items get no verdict: the next run crawls them again")
    # The job document's own line, if any, and the crawl's final word, last.
    assert errors[-1].endswith(
        "ERROR: finish_reason elasticsearch_auth: 0 of 40 items stored: Elasticsearch refused "
        "the crawl's credentials"
    )
    assert len(errors) <= 3, errors
    assert "Traceback" not in text and PASSWORD not in text
    with EsAuthGate(es_node.url, user=USER, password=PASSWORD, run_dir=run_dir) as gate:
        code, _, log = crawl(site, gate, PASSWORD, tmp_path, "local-next")
    assert code == 0, log_excerpt(log)
    assert count_docs(clean_es) == PRODUCTS
