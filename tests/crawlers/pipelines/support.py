"""Helpers for tests that run real ``scrapy crawl`` workers through the item pipelines."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from elasticsearch import Elasticsearch

from core.store import IndexLayout
from harness.demo_site import DemoSite
from standins.demo_site.catalog import build_catalog
from tests.crawlers.support import REPO_ROOT, crawl_env, final_stats, settings_argv, tracked

SITE = "demo"
# What a test of the store leaves in Elasticsearch: the demo's items and the jobs index.
STORE_INDICES = ("items-demo-*", "platform-jobs-*")


def module_site(name: str, products: int) -> Callable[..., Iterator[DemoSite]]:
    """A module-scoped fixture: a demo shop of ``products`` products of its own (``name``:
    its run directory and log), for the crawls of one test module."""

    @pytest.fixture(scope="module")
    def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSite]:
        run_dir = tmp_path_factory.mktemp(name)
        with DemoSite(run_dir=run_dir, products=products, name=name) as server:
            yield server

    return site


def clean_store_indices(es: Elasticsearch) -> None:
    for pattern in STORE_INDICES:
        es.indices.delete(index=pattern, ignore_unavailable=True, allow_no_indices=True)


def start_store_worker(
    *,
    job_id: str,
    base_url: str,
    log_path: Path,
    redis_url: str | None,
    es_url: str | None,
    settings: dict[str, object] | None = None,
    arguments: dict[str, str] | None = None,
    output: Path | None = None,
    env: dict[str, str] | None = None,
    stderr: int | None = None,
) -> subprocess.Popen[bytes]:
    """A ``scrapy crawl demo`` worker with the project's own pipelines (the add-on's).

    ``redis_url``/``es_url`` None: that service is not configured (its pipeline is off).
    Configured by ``-s`` settings only: no platform variable reaches the worker. ``env``:
    extra process variables (e.g. libfaketime's, for a worker whose clock is off).
    """
    services = {"REDIS_URL": redis_url, "ELASTICSEARCH_URL": es_url}
    merged: dict[str, object] = {
        **{name: url for name, url in services.items() if url},
        "FRONTIER_IDLE_CLOSE_SECONDS": 2,
        "FRONTIER_HEARTBEAT_INTERVAL": 0.5,
        "FRONTIER_HEARTBEAT_TTL": 3,
        "STORE_FLUSH_INTERVAL": 0.5,
        "LOG_FILE": str(log_path),
        "LOG_LEVEL": "INFO",
        **(settings or {}),
    }
    argv = [sys.executable, "-m", "scrapy", "crawl", "demo", "-a", f"job_id={job_id}"]
    argv += ["-a", f"base_url={base_url}"]
    if output is not None:
        argv += ["-O", str(output)]
    for name, value in (arguments or {}).items():
        argv += ["-a", f"{name}={value}"]
    argv += settings_argv(merged)
    return tracked(
        subprocess.Popen(argv, cwd=REPO_ROOT, env={**crawl_env(), **(env or {})}, stderr=stderr)
    )


def stored_docs(es: Elasticsearch, site: str = SITE) -> list[dict[str, Any]]:
    """Every document of the site (``_id`` included), after a refresh."""
    alias = IndexLayout.read_alias(site)
    es.indices.refresh(index=alias)
    hits = es.search(index=alias, size=10_000, sort=["_doc"])["hits"]["hits"]
    return [{"_id": hit["_id"], **hit["_source"]} for hit in hits]


def count_docs(es: Elasticsearch, site: str = SITE) -> int:
    alias = IndexLayout.read_alias(site)
    if not es.indices.exists_alias(name=alias):
        return 0
    es.indices.refresh(index=alias)
    return int(es.count(index=alias)["count"])


def reset_store(es: Elasticsearch, server: redis.Redis, site: str = SITE) -> None:
    server.flushdb()
    es.indices.delete(index=f"items-{site}-*", ignore_unavailable=True, allow_no_indices=True)
    es.indices.delete(index="platform-jobs-*", ignore_unavailable=True, allow_no_indices=True)


def key_of(sku: str) -> str:
    return f"{SITE}:demo_product:{sku}"


def assert_stored_once(es: Elasticsearch, log: Path, job_id: str, products: int) -> None:
    """Every product of the demo catalog is in Elasticsearch, stored exactly once by the
    worker that wrote ``log`` (validated, classified new, indexed: each once)."""
    docs = stored_docs(es)
    catalog = build_catalog(n_products=products).products
    assert sorted(doc["_id"] for doc in docs) == sorted(key_of(p.sku) for p in catalog)
    assert {doc["job_id"] for doc in docs} == {job_id}
    stats = final_stats(log)
    counted = ("validation/valid/demo_product", "dedup/verdict/new", "store/indexed")
    assert {name: stats.get(name) for name in counted} == dict.fromkeys(counted, products)
