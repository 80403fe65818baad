"""The suite's xdist scopes (tests/scheduling.py)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.scheduling import ONE_WORKER_PACKAGES, scope_of
from tests.source import parsed

TESTS = Path(__file__).resolve().parent


def _package_scoped_fixtures(conftest: Path) -> list[str]:
    """Names of the fixtures ``conftest`` declares with ``scope="package"``."""
    found = []
    for node in ast.walk(parsed(conftest.read_text(), str(conftest))):
        if not isinstance(node, ast.FunctionDef):
            continue
        for decorator in node.decorator_list:
            if isinstance(decorator, ast.Call) and any(
                kw.arg == "scope"
                and isinstance(kw.value, ast.Constant)
                and kw.value.value == "package"
                for kw in decorator.keywords
            ):
                found.append(node.name)
    return found


def test_every_package_with_package_scoped_fixtures_runs_on_one_worker() -> None:
    packages = {
        f"{conftest.parent.relative_to(TESTS.parent).as_posix()}/"
        for conftest in TESTS.rglob("conftest.py")
        if _package_scoped_fixtures(conftest)
    }
    assert packages, "no package-scoped fixture found: is the check still looking right?"
    assert packages == set(ONE_WORKER_PACKAGES)


def test_a_listed_package_is_one_scope_and_other_tests_are_scoped_by_file() -> None:
    assert (
        scope_of("tests/search/test_api.py::test_x")
        == scope_of("tests/search/test_quality.py::test_y[a]")
        == "tests/search/"
    )
    assert (
        scope_of("tests/core/frontier/test_queue.py::test_z[redis]")
        == "tests/core/frontier/test_queue.py"
    )
    assert scope_of("tests/searching/test_a.py::test_b") == "tests/searching/test_a.py"
