"""The search API (FastAPI TestClient, and the real uvicorn entry point), its health
report, and the operator CLI, against the indexed demo catalog."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import pytest
from elasticsearch import Elasticsearch
from fastapi.testclient import TestClient

from harness.base import free_port, wait_until
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from indexing.process import process_job
from search.api import create_app
from standins.demo_site.catalog import build_catalog
from tests.indexing.support import RecordingEmbedder, product_item, store_job
from tests.search.conftest import SearchableDemo

REPO = Path(__file__).resolve().parents[2]
# A product and a paraphrase that finds it (tests/search/queries.py).
SKU = "DM-00050"
QUERY = "waterproof head torch, 900 lumens, green, for jobs around the tent at night"


@pytest.fixture
def client(searchable_demo: SearchableDemo, local_embedder: RecordingEmbedder) -> TestClient:
    return TestClient(create_app(searchable_demo.es, local_embedder))


def test_search_returns_fused_hits_with_item_fields(
    client: TestClient, searchable_demo: SearchableDemo
) -> None:
    response = client.get("/search", params={"q": QUERY, "site": "searchdemo", "k": 5})
    assert response.status_code == 200
    body = response.json()
    assert (body["mode"], body["k"], body["embedder"]) == (
        "hybrid",
        5,
        "local:all-MiniLM-L6-v2-onnx-int8",
    )
    hits = body["hits"]
    assert len(hits) == 5
    product = searchable_demo.catalog.by_sku[SKU]
    mine = next(h for h in hits if h["item_key"] == f"searchdemo:demo_product:{SKU}")
    assert mine["name"] == product.name and mine["site"] == "searchdemo"
    assert mine["url"] == f"http://demo.example/product/{SKU}"
    assert mine["item"]["price"] == product.price and "reviews" not in mine["item"]
    assert mine["bm25"]["rank"] >= 1 and mine["knn"]["rank"] >= 1
    assert mine["score"] == pytest.approx(
        1 / (60 + mine["bm25"]["rank"]) + 1 / (60 + mine["knn"]["rank"]), abs=1e-5
    )
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert product.name in mine["snippet"]


def test_single_list_modes_and_all_sites(client: TestClient, es: Elasticsearch) -> None:
    # All sites means chunks-*: other test modules' indices in this shared node were
    # embedded by other backends, which the API rightly refuses to mix (409).
    others = [name for name in es.indices.get(index="chunks-*") if "searchdemo" not in name]
    if others:
        es.indices.delete(index=",".join(others))
    bm25 = client.get("/search", params={"q": QUERY, "site": "searchdemo", "mode": "bm25"})
    knn = client.get("/search", params={"q": QUERY, "site": "searchdemo", "mode": "knn"})
    assert all(h["knn"] is None and h["bm25"] for h in bm25.json()["hits"])
    assert all(h["bm25"] is None and h["knn"] for h in knn.json()["hits"])
    everywhere = client.get("/search", params={"q": QUERY, "k": 3})
    assert everywhere.status_code == 200 and len(everywhere.json()["hits"]) == 3


def test_search_errors(client: TestClient, searchable_demo: SearchableDemo) -> None:
    assert client.get("/search", params={"q": "x", "site": "nosuchsite"}).status_code == 404
    assert client.get("/search", params={"q": ""}).status_code == 422
    assert client.get("/search", params={"q": "x", "k": 0}).status_code == 422
    assert client.get("/search", params={"q": "x", "mode": "magic"}).status_code == 422

    class OtherEmbedder:
        name, dims = "test:other", 384

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            return [[1.0] * 384 for _ in texts]

    other = TestClient(create_app(searchable_demo.es, OtherEmbedder()))
    response = other.get("/search", params={"q": "x", "site": "searchdemo"})
    assert response.status_code == 409 and "local:all-MiniLM" in response.json()["detail"]
    bm25_only = TestClient(create_app(searchable_demo.es, None))
    assert bm25_only.get("/search", params={"q": "x", "site": "searchdemo"}).status_code == 400
    ok = bm25_only.get("/search", params={"q": QUERY, "site": "searchdemo", "mode": "bm25"})
    assert ok.status_code == 200


def test_health_reports_freshness_per_site(client: TestClient) -> None:
    response = client.get("/health")
    assert response.status_code == 200
    body = response.json()
    assert body["elasticsearch"]["reachable"] is True
    assert body["elasticsearch"]["version"].startswith("9.")
    assert body["embedder"] == "local:all-MiniLM-L6-v2-onnx-int8"
    site = body["sites"]["searchdemo"]
    assert site["items"]["documents"] == 1200 and site["chunks"]["documents"] > 1200
    assert site["chunks"]["embedder"] == "local:all-MiniLM-L6-v2-onnx-int8"
    assert site["chunks"]["dims"] == 384
    assert site["items"]["latest"] <= site["chunks"]["latest"]  # chunked after the crawl
    assert site["stale"] is False and site["reasons"] == []


def test_health_flags_stale_sites(
    es_node: ElasticsearchNode, redis_server: RedisServer, local_embedder: RecordingEmbedder
) -> None:
    site = "searchstale"
    es = Elasticsearch(es_node.url, request_timeout=60)
    products = build_catalog().products[:10]
    try:
        store_job(
            es_node.url, redis_server.url, site, "j1", [product_item(p, "j1") for p in products]
        )
        es.indices.refresh(index=f"items-{site}")
        app = TestClient(create_app(es, local_embedder))
        entry = app.get("/health").json()["sites"][site]
        assert entry["stale"] and "no chunks" in entry["reasons"][0]

        process_job(es, redis_server.client(), site, "j1", local_embedder)
        assert app.get("/health").json()["sites"][site]["stale"] is False

        # A job changes one product and the LLM step has not run yet: chunks are behind.
        changed = [product_item(products[0], "j2", description="Now with a new description.")]
        store_job(es_node.url, redis_server.url, site, "j2", changed)
        es.indices.refresh(index=f"items-{site}")
        body = app.get("/health").json()
        assert body["status"] == "stale"
        assert "chunks behind items" in " ".join(body["sites"][site]["reasons"])

        old = TestClient(create_app(es, local_embedder, stale_after=dt.timedelta(seconds=0)))
        reasons = old.get("/health").json()["sites"][site]["reasons"]
        assert any(reason.startswith("items last seen") for reason in reasons)
    finally:
        es.indices.delete(index=f"items-{site}-*,chunks-{site}", ignore_unavailable=True)
        es.close()


def test_health_when_elasticsearch_is_unreachable() -> None:
    dead = Elasticsearch("http://127.0.0.1:9", request_timeout=2, max_retries=0)
    response = TestClient(create_app(dead, None)).get("/health")
    assert response.status_code == 503
    assert response.json()["status"] == "down"
    assert response.json()["elasticsearch"]["reachable"] is False


# -- the real entry points -----------------------------------------------------------------


def env_for(es_node: ElasticsearchNode) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(ELASTICSEARCH_URL=es_node.url, COLUMNS="200", PYTHONPATH=str(REPO))
    env.update(EMBEDDING_MODEL="all-MiniLM-L6-v2")  # the searchdemo index's model
    return env


def test_cli_prints_a_table_json_and_health(
    searchable_demo: SearchableDemo, es_node: ElasticsearchNode
) -> None:
    command = [sys.executable, "-m", "search", QUERY, "--site", "searchdemo", "-k", "5"]
    table = subprocess.run(
        command, env=env_for(es_node), cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert table.returncode == 0, table.stderr
    assert searchable_demo.catalog.by_sku[SKU].name in table.stdout
    assert "hybrid search" in table.stdout and "bm25" in table.stdout

    as_json = subprocess.run(
        [*command, "--mode", "bm25", "--json"],
        env=env_for(es_node),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["mode"] == "bm25"

    health = subprocess.run(
        [sys.executable, "-m", "search", "--health"],
        env=env_for(es_node),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "searchdemo" in health.stdout and "reachable" in health.stdout


def answers(url: str) -> bool:
    try:
        httpx.get(f"{url}/health", timeout=2)
    except httpx.TransportError:
        return False
    return True


@pytest.fixture
def api_server(searchable_demo: SearchableDemo, es_node: ElasticsearchNode) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "search.api", "--port", str(port), "--log-level", "warning"],
        env=env_for(es_node),
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            lambda: answers(url),
            timeout=60,
            what="the search API",
            alive=lambda: process.poll() is None,
            # Read stderr only once the process has exited (it would block before).
            log_tail=lambda: process.stderr.read() if process.poll() is not None else "",
        )
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_uvicorn_serves_the_api(api_server: str) -> None:
    assert (
        httpx.get(f"{api_server}/health", timeout=10).json()["sites"]["searchdemo"]["stale"]
        is False
    )
    hits = httpx.get(
        f"{api_server}/search", params={"q": QUERY, "site": "searchdemo", "k": 5}, timeout=30
    ).json()["hits"]
    assert f"searchdemo:demo_product:{SKU}" in [hit["item_key"] for hit in hits]
