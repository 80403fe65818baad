"""Running the ``scrape-<site>`` deployments of profile-only sites on the test stack
(Prefect server and worker, ES node) and reading what they stored.

A module fixture makes ``fresh_profile_dirs`` (its own profiles and fingerprint sites,
the sites' Redis keys and indices gone), writes the sites' profiles there, then runs its
flows inside ``flow_worker`` (the deployments registered, a Prefect worker with the OpenAI
stub).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch

from harness.es_node import ElasticsearchNode
from harness.openai_stub import OpenAIStub
from harness.prefect_server import PrefectServer, PrefectWorker
from harness.redis_server import RedisServer
from tests.orchestration.prefect_api import api, register_deployments

FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class ProfileDirs:
    run_dir: Path
    profiles: Path  # SITE_PROFILES_DIR
    sites: Path  # FINGERPRINT_SITES_DIR

    @property
    def env(self) -> dict[str, str]:
        return {"SITE_PROFILES_DIR": str(self.profiles), "FINGERPRINT_SITES_DIR": str(self.sites)}


def fresh_profile_dirs(
    run_dir: Path, redis_server: RedisServer, es_node: ElasticsearchNode, sites: Iterable[str]
) -> ProfileDirs:
    """Empty profile and fingerprint directories under ``run_dir``; Redis flushed and the
    ``sites``' item and chunk indices deleted."""
    dirs = ProfileDirs(run_dir, run_dir / "profiles", run_dir / "sites")
    dirs.profiles.mkdir()
    dirs.sites.mkdir()
    redis_server.client().flushdb()
    Elasticsearch(es_node.url).indices.delete(
        index=",".join(f"items-{s}*,chunks-{s}*" for s in sites), ignore_unavailable=True
    )
    return dirs


@contextmanager
def flow_worker(
    dirs: ProfileDirs,
    prefect_server: PrefectServer,
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
) -> Iterator[FlowStack]:
    """The deployments of ``dirs``' profiles registered and a Prefect worker running them on
    the test services (embeddings from the OpenAI stub)."""
    openai = OpenAIStub(dims=16)
    openai.start()
    try:
        register_deployments(prefect_server, dirs.env)
        worker_env = {
            **dirs.env,
            "REDIS_URL": redis_server.url,
            "ELASTICSEARCH_URL": es_node.url,
            "OPENAI_BASE_URL": openai.base_url,
            "OPENAI_API_KEY": openai.api_key,
            "EMBEDDING_MODEL": "stub-embedding",
            "PLATFORM_RUN_DIR": str(dirs.run_dir),
        }
        with PrefectWorker(
            prefect_server,
            pool="scraping",
            run_dir=dirs.run_dir,
            extra_env=worker_env,
            cwd=REPO_ROOT,
        ):
            yield FlowStack(prefect_server, es_node, dirs.profiles, dirs.sites)
    finally:
        openai.stop()


@dataclass
class FlowStack:
    prefect: PrefectServer
    es_node: ElasticsearchNode
    profiles: Path
    sites: Path

    def deployment_id(self, name: str) -> str:
        deployments = api(self.prefect, "/deployments/filter", {})
        found = [d["id"] for d in deployments if d["name"] == name]
        assert found, f"no deployment {name}: {[d['name'] for d in deployments]}"
        return str(found[0])

    def run(self, deployment: str, timeout: float = 420) -> dict[str, Any]:
        run = api(
            self.prefect,
            f"/deployments/{self.deployment_id(deployment)}/create_flow_run",
            {"parameters": {}},
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = dict(api(self.prefect, f"/flow_runs/{run['id']}"))
            if state["state"]["type"] in FINAL:
                return state
            time.sleep(1)
        raise AssertionError(f"{deployment} not finished after {timeout}s")

    def artifact(self, run_id: str, key: str) -> str:
        found = api(
            self.prefect, "/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [run_id]}}}
        )
        data = [a["data"] for a in found if a.get("key") == key]
        assert data, f"no artifact {key}: {[a.get('key') for a in found]}"
        return str(data[-1])

    def es(self) -> Elasticsearch:
        return Elasticsearch(self.es_node.url, request_timeout=60)


def stored(stack: FlowStack, index: str) -> dict[str, dict[str, Any]]:
    es = stack.es()
    es.indices.refresh(index=index)
    hits = es.search(index=index, size=1000, query={"match_all": {}})["hits"]["hits"]
    return {hit["_source"]["url"]: hit["_source"] for hit in hits}


def chunked_items(stack: FlowStack, index: str) -> int:
    es = stack.es()
    es.indices.refresh(index=index)
    aggs = {"items": {"cardinality": {"field": "item_key"}}}
    return int(es.search(index=index, size=0, aggs=aggs)["aggregations"]["items"]["value"])
