"""orchestration.local_stack's `flow` command and `make prefect-flow PARAMS=...`: flow
parameters reach the run, and a run that does not complete ends with one line naming its
state, the state's message and the worker log."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config import REPO_ROOT, OperatorError, get_settings
from crawlers.profiles import profile_sites
from harness.base import free_port
from harness.prefect_server import PrefectServer, PrefectWorker
from orchestration import local_stack
from orchestration.flows import check_site_versions, scrape_site

POOL = "local-stack-probe"
EXAMPLE = 'PARAMS="base_url=http://127.0.0.1:8010 approval_timeout=0"'


@pytest.fixture
def platform_run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """PLATFORM_RUN_DIR for this test: the process-wide settings are read once (cached),
    so they are read again now and after the test."""
    monkeypatch.setenv("PLATFORM_RUN_DIR", str(tmp_path))
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


def make_dry_run(*arguments: str) -> subprocess.CompletedProcess[str]:
    """``make -n prefect-flow ...``: prints the commands, runs nothing."""
    # As an operator's top-level make, also under `make test` (a sub-make would announce
    # "Entering directory" on stdout).
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    return subprocess.run(
        ["make", "--no-print-directory", "-n", "prefect-flow", *arguments],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


def joined(text: str) -> str:
    return " ".join(re.sub(r"\\\n", " ", text).split())  # continued lines, one spacing


@pytest.mark.parametrize("docker", ["yes", "no"])
def test_make_passes_params_as_flow_parameters(docker: str) -> None:
    result = make_dry_run(
        f"HAVE_DOCKER={docker}",
        "PROFILE=ztw_shop",
        "PARAMS=base_url=http://h:8010 approval_timeout=0",
    )
    assert result.returncode == 0, result.stderr
    params = "--param base_url=http://h:8010 --param approval_timeout=0"
    if docker == "yes":
        expected = f"prefect deployment run scrape-site/scrape-ztw_shop {params} --watch"
    else:
        expected = f"-m orchestration.local_stack flow scrape-site --site ztw_shop {params}"
    assert expected in joined(result.stdout)
    # No PARAMS: no --param at all.
    plain = make_dry_run(f"HAVE_DOCKER={docker}")
    assert plain.returncode == 0 and "--param" not in plain.stdout


@pytest.mark.parametrize("docker", ["yes", "no"])
@pytest.mark.parametrize("bad", ["approval_timeout", "=3"])
def test_make_refuses_a_malformed_param_in_one_line(docker: str, bad: str) -> None:
    result = make_dry_run(f"HAVE_DOCKER={docker}", f"PARAMS=base_url=http://h {bad}")
    assert result.returncode == 2
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert f"flow parameter '{bad}' is not KEY=VALUE (e.g. {EXAMPLE})" in line


@pytest.mark.parametrize("bad", ["approval_timeout", "=3", ""])
def test_local_stack_refuses_a_malformed_param_before_anything_runs(
    bad: str, capsys: pytest.CaptureFixture[str], platform_run_dir: Path
) -> None:
    with pytest.raises(SystemExit) as raised:
        local_stack.main(["flow", "scrape-site", "--site", "demo", "--param", bad])
    assert raised.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"flow parameter {bad!r} is not KEY=VALUE (e.g. {EXAMPLE})\n"


def test_failure_line_is_one_line_with_state_message_and_log(platform_run_dir: Path) -> None:
    state = {"type": "FAILED", "name": "FailedClosed", "message": "structure gate:\n  drifted"}
    line = local_stack.failure_line("scrape-ztw_shop", state)
    log = local_stack.worker_log()
    assert line == f"scrape-ztw_shop: FailedClosed: structure gate: drifted (worker log: {log})"
    assert log == platform_run_dir / "stack" / "prefect-worker-scraping.log"
    crashed = local_stack.failure_line("x", {"type": "CRASHED", "name": "", "message": ""})
    assert crashed.startswith("x: CRASHED: no state message (worker log: ")


@pytest.fixture(scope="module")
def stack(
    prefect_server: PrefectServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    """A local stack's state file naming the test Prefect server, the probe deployment
    applied, and a worker serving its pool."""
    run_dir = tmp_path_factory.mktemp("local-stack")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env |= prefect_server.client_environment() | {"PLATFORM_RUN_DIR": str(run_dir)}
    applied = subprocess.run(
        [sys.executable, "-m", "tests.orchestration.stack_flows", POOL],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert applied.returncode == 0, applied.stderr[-3000:]
    (run_dir / "stack").mkdir()
    state = {
        "redis_url": "redis://127.0.0.1:1",
        "elasticsearch_url": "http://127.0.0.1:1",
        "demo_site_url": "http://127.0.0.1:1",
        "prefect_api_url": prefect_server.url,
        "prefect_ui": prefect_server.ui_url,
        "prefect_home": str(prefect_server.home),
    }
    (run_dir / "stack" / "stack.json").write_text(json.dumps(state))
    with PrefectWorker(prefect_server, pool=POOL, run_dir=run_dir, cwd=REPO_ROOT):
        yield env


def run_probe(env: dict[str, str], *params: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "orchestration.local_stack", "flow", "stack-probe"]
    for param in params:
        argv += ["--param", param]
    return subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_a_failed_run_ends_with_its_state_message_and_the_worker_log(
    stack: dict[str, str],
) -> None:
    result = run_probe(stack, "base_url=http://127.0.0.1:8010", "approval_timeout=5")
    assert result.returncode == 1, result.stdout + result.stderr
    # The run's own log lines (its progress) reach the terminal; Prefect's events do not.
    assert "stack-probe: flow run " in result.stdout
    assert "INFO    progress: crawl 10/20 pages" in result.stdout
    assert "prefect.artifact" not in result.stdout
    log = Path(stack["PLATFORM_RUN_DIR"]) / "stack" / "prefect-worker-scraping.log"
    # The parameters reached the flow (approval_timeout as a number), the message is one line.
    assert result.stderr.splitlines()[-1] == (
        "stack-probe: FailedClosed: structure gate failed closed: "
        f"http://127.0.0.1:8010 approval_timeout=5 see log (worker log: {log})"
    )


def test_a_completed_run_adds_nothing(stack: dict[str, str]) -> None:
    result = run_probe(stack, "fail=false")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "worker log" not in result.stdout + result.stderr
    assert "progress: crawl 10/20 pages" in result.stdout
    assert result.stdout.splitlines()[-1].startswith("stack-probe: Completed")


def test_stack_ports_are_settable_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    assert local_stack.stack_ports() == local_stack.PORTS
    monkeypatch.setenv("LOCAL_STACK_REDIS_PORT", "26379")
    monkeypatch.setenv("LOCAL_STACK_PREFECT_PORT", "14200")
    ports = local_stack.stack_ports()
    assert ports["redis"] == 26379 and ports["prefect"] == 14200
    assert ports["elasticsearch"] == local_stack.PORTS["elasticsearch"]
    monkeypatch.setenv("LOCAL_STACK_DEMO_PORT", "eighty")
    with pytest.raises(OperatorError, match=r"LOCAL_STACK_DEMO_PORT='eighty' is not a TCP port"):
        local_stack.stack_ports()
    monkeypatch.setenv("LOCAL_STACK_DEMO_PORT", "26379")
    with pytest.raises(OperatorError, match="must differ"):
        local_stack.stack_ports()


def test_up_on_an_occupied_port_starts_nothing_and_names_the_holder(
    platform_run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as other:  # another stack's Redis, as far as this one can tell
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        monkeypatch.setenv("LOCAL_STACK_REDIS_PORT", str(port))
        for name in ("ELASTICSEARCH", "PREFECT", "DEMO"):
            monkeypatch.setenv(f"LOCAL_STACK_{name}_PORT", str(free_port()))
        with pytest.raises(OperatorError) as raised:
            local_stack.up()
    line = raised.value.message
    assert "\n" not in line
    assert f"port {port}" in line and f"pid {os.getpid()}" in line
    assert "LOCAL_STACK_REDIS_PORT" in line
    assert not list((platform_run_dir / "stack").glob("*.pid"))


def test_a_flow_of_an_unknown_site_says_so_before_anything_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    known = ", ".join(profile_sites())  # the sites are the profiles, however many
    line = f"unknown site 'demoo': known sites are {known}; see crawlers/profiles/"
    assert local_stack.run_flow("scrape-site", "demoo") == 2
    assert capsys.readouterr().err.splitlines() == [line]
    # The flow itself, however it is started: failed at once, not on a missing baseline.
    state = scrape_site.fn("demoo")
    assert (state.is_failed(), state.name, state.message) == (True, "UnknownSite", line)
    state = check_site_versions.fn(["demo", "demoo"])
    assert (state.is_failed(), state.message) == (True, line)
