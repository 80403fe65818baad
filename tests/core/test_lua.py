"""core.lua: every script file loads whole, fragments expanded once, and ships in a wheel."""

from __future__ import annotations

import tomllib
from pathlib import Path, PurePosixPath

import pytest

from core.lua import load_script

CORE = Path(__file__).resolve().parents[2] / "core"
SCRIPTS = sorted(CORE.glob("**/lua/*.lua"))


def _package(path: Path) -> str:
    return ".".join(path.parent.parent.relative_to(CORE.parent).parts)


def test_the_scripts_are_found() -> None:
    packages = {_package(path) for path in SCRIPTS}
    assert {"core.frontier", "core.sessions", "core.dedup", "core.store"} <= packages


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(CORE)))
def test_a_script_loads_with_its_includes_expanded(path: Path) -> None:
    text = load_script(_package(path), path.stem)
    assert "--#include" not in text
    assert "redis.call" in text or "local function" in text
    # Headed by what it needs: the comment lines before the first line of Lua.
    assert text.startswith("--"), f"{path.name} has no header comment"


def test_a_fragment_is_pulled_in_once_where_it_is_included() -> None:
    fragment = load_script("core.frontier", "record_function")
    lease = load_script("core.frontier", "lease")
    assert lease.count(fragment) == 1
    assert lease.count("local function record(") == 1
    # Nested includes: retire_function includes ledger_function, acquire both through it.
    acquire = load_script("core.sessions", "acquire")
    assert acquire.count("local function ledger(") == 1
    assert acquire.count("local function retire(") == 1


def test_a_script_is_read_once() -> None:
    assert load_script("core.dedup", "classify") is load_script("core.dedup", "classify")


def test_a_missing_script_is_named() -> None:
    with pytest.raises(FileNotFoundError, match=r"no_such_script\.lua"):
        load_script("core.dedup", "no_such_script")


def test_the_package_data_glob_ships_every_script() -> None:
    config = tomllib.loads((CORE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config["tool"]["setuptools"]["package-data"]["core"]
    for path in SCRIPTS:
        relative = PurePosixPath(path.relative_to(CORE).as_posix())
        # setuptools' ``*`` stays within a directory: the same depth, matched part by part.
        assert any(
            len(relative.parts) == len(PurePosixPath(glob).parts) and relative.match(glob)
            for glob in globs
        ), relative
