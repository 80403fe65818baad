"""The test tiers (tests/conftest.py) put new tests in the right tier without marks:
fast (no service, no subprocess), integration, and among them the long e2e cases.

Synthetic test files run under the suite's own conftest: collected with the fast tier's
``-m "not integration"``, and one run to show a service that slips through fails loudly.
"""

from __future__ import annotations

import textwrap

import pytest

pytest_plugins = ["pytester"]

CONFTEST = "from tests.conftest import *  # noqa: F403 - the suite's hooks and fixtures\n"

TESTS = """
import subprocess
import sys

import pytest

from harness.demo_site import DemoSite


@pytest.fixture
def own_site(tmp_path):
    with DemoSite(run_dir=tmp_path) as site:
        yield site


@pytest.fixture
def wrapped(redis_server):
    return redis_server


def start_site(tmp_path):
    return DemoSite(run_dir=tmp_path).start()


def test_uses_a_session_service(es):
    pass


def test_runs_a_flow_on_the_prefect_server(prefect_server):
    pass


def test_crawls_on_the_redis_cluster(redis_cluster):
    pass


@pytest.mark.e2e
def test_a_soak_marked_by_hand():
    pass


def test_uses_a_service_through_a_fixture(wrapped):
    pass


def test_starts_its_own_service_in_a_fixture(own_site):
    pass


def test_starts_a_service_in_its_body(tmp_path):
    with DemoSite(run_dir=tmp_path):
        pass


def test_runs_a_subprocess_crawl():
    subprocess.run([sys.executable, "-m", "scrapy", "crawl", "demo"])


@pytest.mark.integration
def test_marked_by_hand():
    pass


def test_pure_unit():
    assert sorted([3, 1, 2]) == [1, 2, 3]


def test_runs_a_python_subprocess():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_runs_a_cheap_tool():
    subprocess.run(["true"], check=True)


def test_only_mentions_a_scrapy_command():
    assert ["scrapy", "crawl", "demo"][0] == "scrapy"
"""

INTEGRATION = {
    "test_uses_a_session_service",
    "test_uses_a_service_through_a_fixture",
    "test_starts_its_own_service_in_a_fixture",
    "test_starts_a_service_in_its_body",
    "test_runs_a_subprocess_crawl",
    "test_marked_by_hand",
    "test_runs_a_python_subprocess",
}
E2E = {
    "test_runs_a_flow_on_the_prefect_server",
    "test_crawls_on_the_redis_cluster",
    "test_a_soak_marked_by_hand",
}
FAST = {"test_pure_unit", "test_runs_a_cheap_tool", "test_only_mentions_a_scrapy_command"}


def collected(pytester: pytest.Pytester, markexpr: str) -> set[str]:
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only", "-q", "-m", markexpr)
    return {line.split("::")[-1] for line in result.outlines if "::" in line}


def test_service_and_crawl_tests_are_integration_the_rest_fast(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_synthetic=TESTS)
    assert collected(pytester, "not integration") == FAST
    # Every e2e case is integration too: `make test-fast` never starts one.
    assert collected(pytester, "integration") == INTEGRATION | E2E
    assert collected(pytester, "e2e") == E2E
    assert collected(pytester, "not e2e") == INTEGRATION | FAST


def test_a_service_the_classifier_misses_fails_in_the_fast_tier(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST)
    # The class is looked up at run time: no static analysis can see it.
    pytester.makepyfile(
        test_sneaky=textwrap.dedent(
            """
            import importlib

            import pytest


            def sneaky_site(run_dir):
                harness = importlib.import_module("harness.demo_site")
                return getattr(harness, "".join(["Demo", "Site"]))(run_dir=run_dir)


            @pytest.fixture(scope="module")
            def shared(tmp_path_factory):
                return sneaky_site(tmp_path_factory.mktemp("site")).start()


            def test_sneaky(tmp_path):
                sneaky_site(tmp_path).start()


            def test_sneaky_module_fixture(shared):
                pass


            def test_sneaky_interpreter():
                spawn = getattr(importlib.import_module("subprocess"), "run")
                spawn([importlib.import_module("sys").executable, "-c", "pass"])
            """
        )
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-m", "not integration")
    result.assert_outcomes(failed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*starts the demo-site service, but the test is not marked integration*",
            "*runs a Python subprocess, but the test is not marked integration*",
            "*FAILED test_sneaky.py::test_sneaky *",
            "*FAILED test_sneaky.py::test_sneaky_interpreter *",
            "*ERROR test_sneaky.py::test_sneaky_module_fixture *",
        ],
        consecutive=False,
    )
