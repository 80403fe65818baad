"""docker/compose.yaml through compose-go, the loader Docker Compose itself runs.

tests/docker/composeload is a small Go program over github.com/compose-spec/compose-go/v2
(pinned in its go.mod/go.sum, fetched through the Go module proxy): it loads the file with
an env file and prints the resolved project. This covers what the JSON schema cannot:
interpolation as compose does it, YAML merge keys, profiles, depends_on targets, and the
pass-through of `KEY:` entries from docker/.env. The Go toolchain is part of the machine
image; without it this module is skipped (the schema tests still run).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from crawlers.profiles import profile_sites
from orchestration.wiring import LOCAL_SITES
from tests.docker.support import COMPOSE_FILE, DOCKER_DIR, REPO_ROOT, load_module

# A Go program (compose-go) run per case: a subprocess, off the fast tier.
pytestmark = pytest.mark.integration

LOADER_SOURCE = Path(__file__).resolve().parent / "composeload"
init_env = load_module(DOCKER_DIR / "init_env.py", "init_env_loader")


@pytest.fixture(scope="module")
def loader(tmp_path_factory: pytest.TempPathFactory) -> Path:
    go = shutil.which("go")
    if go is None:
        pytest.skip("no Go toolchain: compose-go loader not built")
    binary = tmp_path_factory.mktemp("composeload") / "composeload"
    env = {**os.environ, "GOFLAGS": "-mod=readonly", "GOTOOLCHAIN": "local"}
    build = subprocess.run(
        [go, "build", "-o", str(binary), "."],
        cwd=LOADER_SOURCE,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=500,
    )
    assert build.returncode == 0, build.stderr
    return binary


@pytest.fixture
def env_file(tmp_path: Path) -> Path:
    path = tmp_path / ".env"
    assert init_env.main(["--env", str(path)]) == 0
    return path


def load(loader: Path, env_file: Path, *profiles: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(loader), str(COMPOSE_FILE), str(env_file), *profiles],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def project(loader: Path, env_file: Path, *profiles: str) -> dict[str, Any]:
    result = load(loader, env_file, *profiles)
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def test_compose_loads_every_service(loader: Path, env_file: Path) -> None:
    services = project(loader, env_file)["services"]
    assert {"redis", "elasticsearch", "kibana", "prefect-server", "prefect-worker"} <= set(services)
    values = init_env.parse_assignments(env_file.read_text())
    redis_url = services["worker-idealista"]["environment"]["REDIS_URL"]
    assert redis_url == f"redis://:{values['REDIS_PASSWORD']}@redis:6379/0"
    worker = services["worker-idealista"]
    assert worker["command"] == ["scrapy", "crawl", "idealista", "-a", "always_on=true"]
    assert worker["deploy"]["replicas"] == 1
    assert worker["depends_on"]["es-setup"]["condition"] == "service_completed_successfully"
    assert services["elasticsearch"]["deploy"]["resources"]["limits"]["memory"] == str(2 * 1024**3)


def test_profiles_select_the_workers(loader: Path, env_file: Path) -> None:
    default = project(loader, env_file, "demo")["services"]  # COMPOSE_PROFILES=demo
    assert {"demo-site", "worker-demo"} <= set(default)
    assert not any(name.startswith("worker-") and name != "worker-demo" for name in default)
    one_site = project(loader, env_file, "idealista")["services"]
    assert "worker-idealista" in one_site and "worker-g2" not in one_site
    sites = project(loader, env_file, "sites")["services"]
    # Every profile's worker but the local sites' (derived: a new profile needs no edit).
    assert {name for name in sites if name.startswith("worker-")} == {
        f"worker-{site}" for site in profile_sites() if site not in LOCAL_SITES
    }


def test_optional_settings_pass_through_only_when_set(loader: Path, env_file: Path) -> None:
    services = project(loader, env_file, "demo")["services"]
    unset = services["prefect-worker"]["environment"]
    assert unset["SLACK_WEBHOOK_URL"] is None  # not an empty string: unset in the container
    assert services["worker-demo"]["environment"]["CHROMIUM_PATH"] is None  # the image's ENV
    with env_file.open("a") as handle:
        handle.write("SLACK_WEBHOOK_URL=https://hooks.example.invalid/T0/B0/x\nWORKER_REPLICAS=3\n")
    loaded = project(loader, env_file)["services"]
    assert loaded["prefect-worker"]["environment"]["SLACK_WEBHOOK_URL"].endswith("/T0/B0/x")
    assert "SLACK_WEBHOOK_URL" not in loaded["worker-demo"]["environment"]  # not its secret
    assert loaded["worker-g2"]["deploy"]["replicas"] == 3


def test_a_missing_secret_stops_compose_with_a_hint(loader: Path, env_file: Path) -> None:
    text = env_file.read_text()
    env_file.write_text(
        "\n".join(line for line in text.splitlines() if not line.startswith("POSTGRES_PASSWORD="))
    )
    result = load(loader, env_file)
    assert result.returncode == 1
    assert "required variable POSTGRES_PASSWORD is missing a value: run docker/init_env.py" in (
        result.stderr
    )
