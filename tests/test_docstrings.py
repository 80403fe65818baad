"""Module docstrings are reference, not the manual: each says what its module is for, what it
reads and where the details are documented (docs/*.md), in at most ``MAX_LINES`` lines.

The platform's modules are found by walking every top-level package of the repository (a
directory with an ``__init__.py``, tests aside), so a package added or moved is checked
without being listed here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.source import parsed

# A whole-source AST scan: heavy on CPU for the fast tier.
pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 20
NOT_PLATFORM = {"tests"}


def platform_packages(root: Path) -> list[Path]:
    """The repository's top-level packages: directories holding an ``__init__.py``."""
    return sorted(
        path
        for path in root.iterdir()
        if path.is_dir()
        and not path.name.startswith(".")
        and path.name not in NOT_PLATFORM
        and (path / "__init__.py").is_file()
    )


def modules(root: Path) -> list[Path]:
    return sorted(
        path
        for package in platform_packages(root)
        for path in package.rglob("*.py")
        if "__pycache__" not in path.parts
    )


def docstring_lines(source: str, filename: str = "<unknown>") -> int:
    """Lines of the module docstring as written (0 without one)."""
    docstring = ast.get_docstring(parsed(source, filename), clean=False)
    return len(docstring.splitlines()) if docstring else 0


def too_long(root: Path, limit: int = MAX_LINES) -> list[str]:
    """``path: N lines`` for every module of ``root``'s packages whose docstring exceeds
    ``limit`` lines."""
    found = []
    for path in modules(root):
        lines = docstring_lines(path.read_text(encoding="utf-8"), str(path))
        if lines > limit:
            found.append(f"{path.relative_to(root)}: {lines} lines")
    return found


def test_every_platform_module_docstring_is_at_most_20_lines() -> None:
    offenders = too_long(REPO_ROOT)
    assert not offenders, (
        f"module docstrings over {MAX_LINES} lines (say what the module is for, what it "
        "reads and which docs/*.md section holds the details; move the rest there):\n"
        + "\n".join(offenders)
    )


def test_the_walk_finds_the_platform_packages() -> None:
    names = {package.name for package in platform_packages(REPO_ROOT)}
    assert {"crawlers", "bench", "harness"} <= names
    assert "tests" not in names
    assert len(modules(REPO_ROOT)) > 100


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_a_long_docstring_in_any_package_is_named(tmp_path: Path) -> None:
    long_doc = '"""' + "\n".join(f"line {n}" for n in range(21)) + '\n"""\n'
    _write(tmp_path / "newpkg" / "__init__.py", "")
    _write(tmp_path / "newpkg" / "deep" / "mod.py", long_doc + "X = 1\n")
    _write(tmp_path / "newpkg" / "short.py", '"""One line."""\n')
    # Not a package (no __init__.py), and the tests: not walked.
    _write(tmp_path / "loose" / "mod.py", long_doc)
    _write(tmp_path / "tests" / "__init__.py", "")
    _write(tmp_path / "tests" / "test_x.py", long_doc)

    assert too_long(tmp_path) == [f"{Path('newpkg', 'deep', 'mod.py')}: 21 lines"]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('"""One line."""\n', 1),
        ('"""First.\n\nThird.\n"""\n', 3),
        ("X = 1\n", 0),
        ('from __future__ import annotations\n"""Not a docstring."""\n', 0),
    ],
)
def test_docstring_lines_counts_the_docstring_as_written(source: str, expected: int) -> None:
    assert docstring_lines(source) == expected
