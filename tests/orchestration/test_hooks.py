"""The alert hooks on a real Prefect server: one error alert per failed run, naming the
failed step, with its error and its last log lines; none when the flow alerted itself."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.prefect_server import PrefectServer
from harness.slack_receiver import SlackReceiver

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[SlackReceiver]:
    with SlackReceiver(run_dir=tmp_path) as server:
        yield server


def run_case(case: str, prefect_server: PrefectServer, receiver: SlackReceiver) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(prefect_server.client_environment())
    env["SLACK_WEBHOOK_URL"] = receiver.url
    done = subprocess.run(
        [sys.executable, "-m", "tests.orchestration.hook_flows", case],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == ("COMPLETED" if case == "ok" else "FAILED")
    return [str(post.get("text", "")) for post in receiver.posts()]


def test_a_failed_step_alerts_once_with_its_last_log_lines(
    prefect_server: PrefectServer, receiver: SlackReceiver
) -> None:
    (text,) = run_case("step", prefect_server, receiver)
    print(text)
    assert "*scrape-demo* failed at step *probe*" in text
    assert "StepError: frontier unreachable" in text
    assert "WARNING probing the frontier" in text


def test_a_failure_outside_the_steps_alerts_once_naming_the_flow(
    prefect_server: PrefectServer, receiver: SlackReceiver
) -> None:
    (text,) = run_case("flow", prefect_server, receiver)
    assert "failed at step *flow*" in text
    assert "RuntimeError: the flow itself broke" in text
    assert "about to fail outside any step" in text


@pytest.mark.parametrize("case", ["closed", "ok"])
def test_no_error_alert_when_the_flow_alerted_itself_or_passed(
    case: str, prefect_server: PrefectServer, receiver: SlackReceiver
) -> None:
    assert run_case(case, prefect_server, receiver) == []
