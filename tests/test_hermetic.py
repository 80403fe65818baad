"""The suite is hermetic: every variable the platform documents (``core.config.ENVIRONMENT``)
set in the shell, to values that would mislead a test that read it, changes no result.

tests/conftest.py clears them at start; this runs the fast-tier tests that read the
environment (those naming a documented variable or ``core.config``) in a fresh pytest with
all of them set."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from core.config import ENVIRONMENT

REPO = Path(__file__).resolve().parents[1]


def misleading(name: str, where: Path) -> str:
    """A value that would fail the test that read it: wrong services, wrong directories,
    secrets that authenticate nothing."""
    if name.endswith("_URL"):
        return "http://127.0.0.1:9" if "REDIS" not in name else "redis://127.0.0.1:9/0"
    if name.endswith("_DIR") or name.endswith("_FILE") or name == "CHROMIUM_PATH":
        return str(where / name.lower())
    if name in {"REDIS_CLUSTER"}:
        return "1"
    if name.endswith(("_RETRIES", "_TIMEOUT", "_INTERVAL", "_PAGES")):
        return "7"
    return f"shell-{name.lower()}"


def reading_tests() -> list[str]:
    names = [variable.name for variable in ENVIRONMENT]
    found = []
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        if path.name == Path(__file__).name:
            continue
        text = path.read_text(encoding="utf-8")
        if "core.config" in text or any(name in text for name in names):
            found.append(str(path.relative_to(REPO)))
    return found


def test_the_tests_that_read_the_environment_pass_with_every_documented_variable_set(
    tmp_path: Path,
) -> None:
    selected = reading_tests()
    assert len(selected) >= 10, selected  # the selection is not empty by a bug
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        **{v.name: misleading(v.name, tmp_path) for v in ENVIRONMENT},
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-m",
            "not integration",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "2",
            *selected,
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout.splitlines()[-1]
