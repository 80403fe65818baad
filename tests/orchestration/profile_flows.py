"""Running the ``scrape-<site>`` deployments of profile-only sites on the test stack
(Prefect server and worker, ES node) and reading what they stored."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch

from harness.es_node import ElasticsearchNode
from harness.prefect_server import PrefectServer
from tests.orchestration.prefect_api import api

FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


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
