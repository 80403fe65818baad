"""Real services for the test suite, started once per session on free loopback ports.

Each fixture starts the service through the project's own harness (``services``), so
the tests exercise exactly what local mode and the demo run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from services.es_node import ElasticsearchNode
from services.prefect_server import PrefectServer
from services.redis_server import RedisServer

# Tests never reach a configured production service by accident.
for _var in ("REDIS_URL", "ELASTICSEARCH_URL", "PREFECT_API_URL", "SLACK_WEBHOOK_URL"):
    os.environ.pop(_var, None)

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_REAL_PAGES = REPO_ROOT.parent / "shared" / "real-pages"


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Per-session directory for service logs, PIDs and data."""
    return Path(tmp_path_factory.mktemp("services"))


@pytest.fixture(scope="session")
def redis_server(run_dir: Path) -> Iterator[RedisServer]:
    with RedisServer(run_dir=run_dir) as server:
        yield server


@pytest.fixture(scope="session")
def prefect_server(run_dir: Path) -> Iterator[PrefectServer]:
    with PrefectServer(run_dir=run_dir) as server:
        yield server


@pytest.fixture(scope="session")
def es_node(run_dir: Path) -> Iterator[ElasticsearchNode]:
    # Wildcard deletes let tests clean up ``items-*`` between cases.
    settings = {"action.destructive_requires_name": "false"}
    with ElasticsearchNode(run_dir=run_dir, settings=settings) as node:
        yield node


@pytest.fixture
def es(es_node: ElasticsearchNode) -> Iterator[Elasticsearch]:
    client = Elasticsearch(es_node.url, request_timeout=60)
    yield client
    client.close()
