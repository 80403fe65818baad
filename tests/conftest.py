"""Real services for the test suite, started once per session on free loopback ports, and
the test tiers.

Each fixture starts the service through the project's own harness (``harness``), so
the tests exercise exactly what local mode and the demo run.

Tiers: a test is ``integration`` when it needs a service or runs a Python subprocess (a
crawl, a CLI); ``make test-fast`` runs the rest (``-m "not integration"``). Among them,
``e2e`` tests are the long end-to-end cases: Prefect flow runs (a ``prefect_server``),
Redis and Elasticsearch clusters, the benchmarks' tiny and smoke runs (the integration
tests of ``tests/bench``; its unit tests are fast) and tests marked ``@pytest.mark.e2e``
by hand; ``make test`` runs everything else and ``make test-e2e`` those. The marks are set
here, at collection, so a new test lands in the right tier without marking itself: a test
is integration when its fixture closure holds a service fixture below, or when the test, a
fixture it uses or a ``tests.*`` helper they call names a harness process class
(``harness.base.SupervisedProcess``) or starts a process whose argv names ``scrapy`` or
the interpreter (``sys.executable``). A test may also carry ``@pytest.mark.integration``
itself. In the fast tier a service or a Python subprocess that slips through fails its
test loudly instead of running.
"""

from __future__ import annotations

import os
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import Elasticsearch

from harness.base import SupervisedProcess
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchCluster, ElasticsearchNode
from harness.prefect_server import PrefectServer
from harness.redis_server import RedisCluster, RedisServer
from tests.scheduling import make_scheduler

# Tests never reach a configured production service by accident.
for _var in ("REDIS_URL", "ELASTICSEARCH_URL", "PREFECT_API_URL", "SLACK_WEBHOOK_URL"):
    os.environ.pop(_var, None)

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_REAL_PAGES = REPO_ROOT.parent / "shared" / "real-pages"

INTEGRATION = "integration"
E2E = "e2e"
# Session services: a test using one (directly or through another fixture) is integration.
SERVICE_FIXTURES = frozenset({"redis_server", "es_node", "prefect_server", "demo_site_server"})
SERVICE_FIXTURES |= {"redis_cluster", "es_cluster"}
# Services of the long end-to-end cases: flow runs on a Prefect server, the clusters.
E2E_FIXTURES = frozenset({"prefect_server", "redis_cluster", "es_cluster"})
# The benchmarks' tiny and smoke runs (whole stacks): their tests that start services.
E2E_DIRS = (REPO_ROOT / "tests" / "bench",)


# -- the tiers ---------------------------------------------------------------------------------


# Names a function that starts a process uses (``subprocess.run`` shows as ``subprocess``).
_SPAWNERS = frozenset({"subprocess", "Popen", "check_output", "create_subprocess_exec"})


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _needs_services(func: Callable[..., Any], seen: set[types.CodeType]) -> bool:
    """Whether ``func`` (or a ``tests.*`` helper it calls) starts a service or a crawl."""
    func = getattr(func, "__func__", func)
    code = getattr(func, "__code__", None)
    if code is None or code in seen:
        return False
    seen.add(code)
    namespace = getattr(func, "__globals__", {})
    for nested in _code_objects(code):
        # A subprocess whose argv names scrapy (`scrapy crawl|runspider ...`) or a Python
        # interpreter (`sys.executable -m <cli>`): each pays a fresh interpreter's imports.
        spawns = _SPAWNERS.intersection(nested.co_names)
        if spawns and ("scrapy" in nested.co_consts or "executable" in nested.co_names):
            return True
        for name in nested.co_names:
            value = namespace.get(name)
            if isinstance(value, type) and issubclass(value, SupervisedProcess):
                return True
            if isinstance(value, list | tuple) and sys.executable in value:
                return True  # an argv constant naming the interpreter
            if (
                isinstance(value, types.FunctionType)
                and value.__module__.startswith("tests.")
                and _needs_services(value, seen)
            ):
                return True
    return False


def _is_integration(item: pytest.Function) -> bool:
    if SERVICE_FIXTURES.intersection(item.fixturenames):
        return True
    seen: set[types.CodeType] = set()
    fixtures = item._fixtureinfo.name2fixturedefs
    # This module's own fixtures are judged by name (SERVICE_FIXTURES), not by their code.
    funcs = [f.func for defs in fixtures.values() for f in defs if f.func.__module__ != __name__]
    return any(_needs_services(func, seen) for func in [item.function, *funcs])


def _is_e2e(item: pytest.Function) -> bool:
    if E2E_FIXTURES.intersection(item.fixturenames):
        return True
    # A benchmark's arithmetic checked on figures given by hand is a unit test.
    in_dir = any(item.path.is_relative_to(directory) for directory in E2E_DIRS)
    return in_dir and _is_integration(item)


@pytest.hookimpl(tryfirst=True)  # before -m deselects on the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not isinstance(item, pytest.Function):
            continue
        if not item.get_closest_marker(E2E) and _is_e2e(item):
            item.add_marker(pytest.mark.e2e)
        if item.get_closest_marker(E2E) and not item.get_closest_marker(INTEGRATION):
            item.add_marker(pytest.mark.integration)  # every end-to-end case needs services
        if not item.get_closest_marker(INTEGRATION) and _is_integration(item):
            item.add_marker(pytest.mark.integration)


def _fast_tier(config: pytest.Config) -> bool:
    return f"not {INTEGRATION}" in (config.option.markexpr or "")


@pytest.fixture(scope="session", autouse=True)
def fast_tier_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    """In the fast tier, a service or crawl the classifier missed fails the test that
    starts it (or the test whose fixture does) instead of running."""
    if not _fast_tier(request.config):
        yield
        return

    def refuse(what: str) -> None:
        pytest.fail(f"{what}, but the test is not marked {INTEGRATION}", pytrace=False)

    def start(service: SupervisedProcess) -> None:
        refuse(f"starts the {service.name} service")

    popen_init = subprocess.Popen.__init__

    def checked_popen(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        argv = [args] if isinstance(args, str | os.PathLike) else list(args)
        if "scrapy" in (str(arg) for arg in argv):
            refuse("runs a scrapy subprocess")
        if argv and str(argv[0]) == sys.executable:
            refuse("runs a Python subprocess")
        popen_init(self, args, *rest, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SupervisedProcess, "start", start)
        patch.setattr(subprocess.Popen, "__init__", checked_popen)
        yield


# -- the services ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Per-session directory for service logs, PIDs and data."""
    return Path(tmp_path_factory.mktemp("services"))


@pytest.fixture(scope="session")
def local_embedder(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The offline model (tests/indexing, tests/search), one per process; its vectors
    shared by the run's workers."""
    from tests.indexing.support import run_shared_dir, shared_local_embedder

    return shared_local_embedder(run_shared_dir(tmp_path_factory))


@pytest.fixture(scope="session")
def redis_server(run_dir: Path) -> Iterator[RedisServer]:
    with RedisServer(run_dir=run_dir) as server:
        yield server


@pytest.fixture(scope="session")
def redis_cluster(run_dir: Path) -> Iterator[RedisCluster]:
    """One Redis Cluster of three masters per session (AOF on: a test may restart one)."""
    with RedisCluster(run_dir=run_dir / "redis-cluster", persistent=True) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def prefect_server(run_dir: Path) -> Iterator[PrefectServer]:
    # With its UI: tests/orchestration/test_scrape_flow.py watches a run in it (Chromium).
    with PrefectServer(run_dir=run_dir, ui=True) as server:
        yield server


@pytest.fixture(scope="session")
def es_node(run_dir: Path) -> Iterator[ElasticsearchNode]:
    # Wildcard deletes let tests clean up ``items-*`` between cases.
    settings = {"action.destructive_requires_name": "false"}
    with ElasticsearchNode(run_dir=run_dir, settings=settings) as node:
        yield node


@pytest.fixture(scope="session")
def es_cluster(run_dir: Path) -> Iterator[ElasticsearchCluster]:
    """Three Elasticsearch nodes forming one cluster (green when yielded), shared by every
    test of a node's loss; a test that stops a node starts it again (``start_node``)."""
    settings = {"action.destructive_requires_name": "false"}
    with ElasticsearchCluster(run_dir=run_dir, nodes=3, settings=settings) as cluster:
        yield cluster


@pytest.fixture
def es(es_node: ElasticsearchNode) -> Iterator[Elasticsearch]:
    client = Elasticsearch(es_node.url, request_timeout=60)
    yield client
    client.close()


@pytest.fixture(scope="session")
def demo_site_server(run_dir: Path) -> Iterator[DemoSite]:
    """The demo shop with its defaults (seed 7, 1,200 products, layout v1), shared by every
    module that needs no other catalog. Use it through ``demo_site`` (reset per test)."""
    with DemoSite(run_dir=run_dir, access_log=run_dir / "demo-access.jsonl") as server:
        yield server


@pytest.fixture
def demo_site(demo_site_server: DemoSite) -> DemoSite:
    """The shared demo shop, reset: no behaviours, empty access log, layout as started."""
    demo_site_server.reset()
    return demo_site_server


@pytest.hookimpl(optionalhook=True)  # xdist's hook: unknown when xdist is not loaded
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    return make_scheduler(config, log)
