"""crawlee's own virtualenv for ``bench.frontier``'s crawlee row (``.venv-crawlee``).

crawlee's pins differ from the platform's, so it gets a venv of its own, with what
``bench/crawlee_demo.py`` needs of the repository's code (the demo spider's extraction,
the item schema, the digests): not a list kept by hand, which rots as soon as that code
imports something new (it did: babel), but the project's own dependency list
(``pyproject.toml``), narrowed to the distributions the script reaches:

1. the script's imports, followed through every repository module it imports, function
   bodies included (a lazy import is needed as much as a top-level one);
2. the distributions those third-party modules come from, and everything those
   distributions require, transitively (as installed in the project's venv);
3. of these, each one the project pins, at the project's pin.

Whatever the project pins and the extraction uses is installed at the same version as
in the project's venv; what neither the project nor the extraction names comes with
crawlee and the pinned packages, as pip resolves it.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterable
from pathlib import Path

from core.config import REPO_ROOT

CRAWLEE_VENV = REPO_ROOT / ".venv-crawlee"
CRAWLEE_REQUIREMENT = "crawlee[parsel]==1.11.0"
CRAWLEE_SCRIPT = REPO_ROOT / "bench" / "crawlee_demo.py"
# The marker written once the venv holds exactly these requirements.
MARKER = "bench-requirements.txt"


def normalized(name: str) -> str:
    """A distribution name as PEP 503 compares them (``Price_Parser`` = ``price-parser``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(spec: str) -> str:
    return normalized(re.split(r"[\s\[;<>=!~(]", spec.strip(), maxsplit=1)[0])


def project_pins(pyproject: Path = REPO_ROOT / "pyproject.toml") -> dict[str, str]:
    """The project's dependencies (``[project] dependencies``): name -> its requirement."""
    project = tomllib.loads(pyproject.read_text())["project"]
    return {requirement_name(spec): spec for spec in project["dependencies"]}


def _repo_packages(root: Path) -> frozenset[str]:
    return frozenset(path.parent.name for path in root.glob("*/__init__.py"))


def _module_file(root: Path, dotted: str) -> Path | None:
    path = root.joinpath(*dotted.split("."))
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    return path.with_suffix(".py") if path.with_suffix(".py").is_file() else None


def imported_modules(script: Path, root: Path = REPO_ROOT) -> set[str]:
    """Top-level names of the third-party modules ``script`` reaches: its imports and
    those of every repository module it imports (packages' ``__init__`` included)."""
    local = _repo_packages(root)
    seen: set[Path] = set()
    third_party: set[str] = set()
    pending = [script]
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                # ``from a.b import c``: c may be a module of a.b, or a name in it.
                names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts[0] not in local:
                    if parts[0] not in sys.stdlib_module_names:
                        third_party.add(parts[0])
                    continue
                for depth in range(1, len(parts) + 1):
                    found = _module_file(root, ".".join(parts[:depth]))
                    if found is not None:
                        pending.append(found)
    return third_party


def required_distributions(modules: Iterable[str]) -> set[str]:
    """The installed distributions providing ``modules``, and everything they require
    (transitively, extras' requirements aside), as normalised names."""
    providers = importlib.metadata.packages_distributions()
    pending = [normalized(dist) for module in modules for dist in providers.get(module, ())]
    found: set[str] = set()
    while pending:
        name = pending.pop()
        if name in found:
            continue
        found.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue  # crawlee's own side (crawlee, parsel's extras): not ours to pin
        pending += [requirement_name(spec) for spec in requires if "extra ==" not in spec]
    return found


@functools.cache
def crawlee_requirements() -> tuple[str, ...]:
    """crawlee, and each distribution the project pins that its script needs, at the pin."""
    needed = required_distributions(imported_modules(CRAWLEE_SCRIPT))
    pins = project_pins()
    return (CRAWLEE_REQUIREMENT, *(pins[name] for name in sorted(needed & pins.keys())))


def _wanted() -> str:
    return "\n".join(crawlee_requirements()) + "\n"


def ensure_crawlee() -> Path | None:
    """crawlee's venv at the current requirements (set up or updated here), or None if it
    cannot be installed (no package index: its row is then left out)."""
    python = CRAWLEE_VENV / "bin" / "python"
    marker = CRAWLEE_VENV / MARKER
    wanted = _wanted()
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return python
    try:
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(CRAWLEE_VENV)], check=True)
        # Few retries: without a package index the row is left out, quickly.
        pip = [str(python), "-m", "pip", "install", "-q", "--retries", "1", "--timeout", "30"]
        subprocess.run([*pip, *wanted.split()], check=True)
    except subprocess.CalledProcessError as exc:
        print(f"crawlee unavailable ({exc}); its row is left out", file=sys.stderr)
        shutil.rmtree(CRAWLEE_VENV, ignore_errors=True)
        return None
    marker.write_text(wanted)
    return python


def crawlee_python() -> Path | None:
    """crawlee's venv as ``ensure_crawlee`` left it at the current requirements, or None
    (never installs)."""
    python = CRAWLEE_VENV / "bin" / "python"
    marker = CRAWLEE_VENV / MARKER
    return python if marker.exists() and marker.read_text() == _wanted() else None
