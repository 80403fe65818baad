"""The type checker's configuration ([tool.mypy] in pyproject.toml) and the ``type: ignore``
comments left in the packages it checks: each names its error code and says why."""

from __future__ import annotations

import io
import re
import tokenize
import tomllib
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"crawlers", "core", "fingerprints", "orchestration", "indexing", "search"}
_IGNORE = re.compile(r"#\s*type:\s*ignore\b")
# ``# type: ignore[code, code]  # why``: the codes, then a comment of its own with the reason.
_JUSTIFIED = re.compile(r"#\s*type:\s*ignore\[[a-z-]+(?:,\s*[a-z-]+)*\]\s+#\s*\S")


def _mypy() -> dict[str, Any]:
    config: dict[str, Any] = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    return dict(config["tool"]["mypy"])


def unjustified(source: str) -> list[tuple[int, str]]:
    """The ``type: ignore`` comments of ``source`` without an error code or a reason."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT or not _IGNORE.search(token.string):
            continue
        if not _JUSTIFIED.search(token.string):
            found.append((token.start[0], token.string))
    return found


def _pending(mypy: dict[str, Any]) -> list[str]:
    """Modules whose errors are ignored for now (other work on them merges first)."""
    patterns: list[str] = []
    for override in mypy.get("overrides", []):
        if override.get("ignore_errors"):
            module = override["module"]
            patterns += [module] if isinstance(module, str) else module
    return patterns


def _covered(module: str, patterns: list[str]) -> bool:
    return any(
        module == pattern.removesuffix(".*")
        or (pattern.endswith(".*") and module.startswith(pattern[:-1]))
        for pattern in patterns
    )


def _module(path: Path) -> str:
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_checker_needs_a_code_and_a_reason() -> None:
    assert unjustified("x = f()  # type: ignore\n") == [(1, "# type: ignore")]
    assert [n for n, _ in unjustified("a = 1\nx = f()  # type: ignore[arg-type]\n")] == [2]
    assert unjustified("x = f()  # type: ignore[arg-type]  #\n")
    assert unjustified("x = f()  # type: ignore[arg-type]  # redis-py's stub is too narrow\n") == []
    assert unjustified("x = f()  # type: ignore[misc, override]  # why\n") == []
    # Only comments count: the words inside a string are no ignore.
    assert unjustified('text = "# type: ignore"\n') == []


def test_mypy_checks_the_platform_packages_strictly_enough() -> None:
    mypy = _mypy()
    assert set(mypy["packages"]) == PACKAGES
    assert mypy["python_version"] == "3.11"
    assert mypy["warn_unused_ignores"] is True
    # Per module only: a global switch would hide every missing import or every error.
    assert "ignore_missing_imports" not in mypy
    assert "ignore_errors" not in mypy
    for override in mypy.get("overrides", []):
        if override.get("ignore_missing_imports"):
            modules = override["module"]
            assert all(m.split(".")[0] not in PACKAGES for m in modules), modules


def test_pattern_matching_of_pending_modules() -> None:
    assert _covered("crawlers.fetch.retry", ["crawlers.fetch.*"])
    assert _covered("crawlers.fetch", ["crawlers.fetch.*"])
    assert not _covered("crawlers.fetcher", ["crawlers.fetch.*"])
    assert _covered("core.keys", ["core.keys"])
    assert not _covered("core.keys_extra", ["core.keys"])


@pytest.mark.integration  # the whole source tokenized: kept out of the fast tier's budget
def test_every_type_ignore_names_its_code_and_why() -> None:
    pending = _pending(_mypy())
    checked, problems = 0, []
    for package in sorted(PACKAGES):
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            if _covered(_module(path), pending):
                continue  # checked once the override goes (pyproject.toml: "pending")
            checked += 1
            for line, comment in unjustified(path.read_text()):
                problems.append(f"{path.relative_to(REPO_ROOT)}:{line}: {comment}")
    assert checked > 100, "the scan found the packages"
    header = "type: ignore without an error code or a reason ('# type: ignore[code]  # why'):"
    assert problems == [], "\n".join([header, *problems])
