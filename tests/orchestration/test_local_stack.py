"""orchestration.local_stack's `flow` command and `make prefect-flow PARAMS=...`
(orchestration.deployment_run): flow parameters reach the run, a paused deployment runs
only when forced, and a run that does not end plain Completed ends with one line naming
its state, the state's message and the worker log, and a non-zero exit status."""

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
from orchestration import deployment_run, local_stack
from orchestration.flows import check_site_versions, scrape_site
from tests.orchestration.prefect_api import api

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
        expected = (
            "exec prefect-worker python -m orchestration.deployment_run scrape-site "
            f"--site ztw_shop {params}"
        )
    else:
        expected = f"-m orchestration.local_stack flow scrape-site --site ztw_shop {params}"
    assert joined(result.stdout).endswith(expected)
    # No PARAMS: no --param at all; FORCE=1 (only) forces a paused deployment.
    plain = make_dry_run(f"HAVE_DOCKER={docker}")
    assert plain.returncode == 0 and "--param" not in plain.stdout
    assert "--force" not in plain.stdout + make_dry_run("FORCE=0").stdout
    assert joined(make_dry_run(f"HAVE_DOCKER={docker}", "FORCE=1").stdout).endswith("--force")


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


def test_the_compose_entry_point_names_the_server_it_lacks(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    with pytest.raises(SystemExit) as raised:
        deployment_run.main(["scrape-site", "--site", "demo"])
    assert raised.value.code == 2
    assert capsys.readouterr().err == (
        "PREFECT_API_URL is not set: point it at the Prefect server's API "
        "(e.g. http://prefect-server:4200/api)\n"
    )


def test_the_final_line_is_one_line_with_state_message_and_log(platform_run_dir: Path) -> None:
    state = {"type": "FAILED", "name": "FailedClosed", "message": "structure gate:\n  drifted"}
    log = f"worker log: {local_stack.worker_log()}"
    line = deployment_run.state_line("scrape-ztw_shop", state, log)
    assert line == f"scrape-ztw_shop: FailedClosed: structure gate: drifted ({log})"
    assert local_stack.worker_log() == platform_run_dir / "stack" / "prefect-worker-scraping.log"
    crashed = {"type": "CRASHED", "name": "", "message": ""}
    assert deployment_run.state_line("x", crashed, log).startswith("x: CRASHED: no state message")


@pytest.mark.parametrize(
    ("state_type", "name", "plain"),
    [
        ("COMPLETED", "Completed", True),
        ("COMPLETED", "", True),
        ("COMPLETED", "CompletedWithWarnings", False),
        ("FAILED", "Incomplete", False),
        ("FAILED", "NothingStored", False),
        ("FAILED", "Failed", False),
        ("CRASHED", "Crashed", False),
        ("CANCELLED", "Cancelled", False),
    ],
)
def test_only_plain_completed_counts_as_success(state_type: str, name: str, plain: bool) -> None:
    assert deployment_run.completed({"type": state_type, "name": name, "message": ""}) is plain


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


def run_probe(
    env: dict[str, str], *params: str, force: bool = False
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "orchestration.local_stack", "flow", "stack-probe"]
    for param in params:
        argv += ["--param", param]
    argv += ["--force"] if force else []
    return subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)


def probe_logs(prefect: PrefectServer, run_id: str) -> list[str]:
    body = {"logs": {"flow_run_id": {"any_": [run_id]}}, "sort": "TIMESTAMP_ASC", "limit": 200}
    return [log["message"] for log in api(prefect, "/logs/filter", body)]


def test_a_failed_run_ends_with_its_state_message_and_the_worker_log(
    stack: dict[str, str], prefect_server: PrefectServer
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
    # The run's log ends on its state, not on Prefect's traceback of the returned state.
    run_id = result.stdout.split("flow run ", 1)[1].split()[0]
    lines = probe_logs(prefect_server, run_id)
    assert lines[-1].startswith("Finished in state FailedClosed("), lines[-3:]
    assert not [line for line in lines if "Traceback" in line or "unexpected exception" in line]


def test_a_completed_run_adds_nothing(stack: dict[str, str]) -> None:
    result = run_probe(stack, "fail=false")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "worker log" not in result.stdout + result.stderr
    assert "progress: crawl 10/20 pages" in result.stdout
    assert result.stdout.splitlines()[-1].startswith("stack-probe: Completed")


def test_a_run_completed_with_warnings_is_no_plain_success(stack: dict[str, str]) -> None:
    result = run_probe(stack, "warn=true")
    assert result.returncode == 1, result.stdout + result.stderr
    log = Path(stack["PLATFORM_RUN_DIR"]) / "stack" / "prefect-worker-scraping.log"
    assert result.stderr.splitlines() == [
        f"stack-probe: CompletedWithWarnings: structure drifted (worker log: {log})"
    ]


def test_a_paused_deployment_runs_only_when_forced(
    stack: dict[str, str], prefect_server: PrefectServer
) -> None:
    (deployment,) = [
        found
        for found in api(prefect_server, "/deployments/filter", {})
        if found["name"] == "stack-probe"
    ]
    path = f"/deployments/{deployment['id']}"

    def probe_runs() -> int:
        body = {"deployments": {"id": {"any_": [deployment["id"]]}}}
        return len(api(prefect_server, "/flow_runs/filter", body))

    api(prefect_server, path, {"paused": True}, method="PATCH")
    try:
        before = probe_runs()
        refused = run_probe(stack, "fail=false")
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert refused.stdout == ""
        assert refused.stderr.splitlines() == [
            "stack-probe: the deployment is paused (its schedule does not run), so it was not "
            "started; to run it anyway: make prefect-flow FLOW=stack-probe FORCE=1 (or --force)"
        ]
        assert probe_runs() == before  # nothing was started
        forced = run_probe(stack, "fail=false", force=True)
        assert forced.returncode == 0, forced.stdout + forced.stderr
        assert probe_runs() == before + 1
    finally:
        api(prefect_server, path, {"paused": False}, method="PATCH")


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
