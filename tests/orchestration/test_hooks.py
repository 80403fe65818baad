"""The alert hooks on a real Prefect server: one error alert per failed run, naming the
failed step, with its error and its last log lines; none when the flow alerted itself."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.prefect_server import PrefectServer
from harness.slack_receiver import SlackReceiver
from orchestration.hooks import ALERTED_EVENT
from tests.crawlers.support import wait_for
from tests.orchestration.prefect_api import api

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[SlackReceiver]:
    with SlackReceiver(run_dir=tmp_path) as server:
        yield server


def run_case(
    case: str, prefect_server: PrefectServer, receiver: SlackReceiver, runs: list[str] | None = None
) -> list[str]:
    """The Slack texts the case's run sent; its flow run id appended to ``runs``."""
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
    *_, run_id, final = done.stdout.strip().splitlines()
    assert final == ("COMPLETED" if case == "ok" else "FAILED")
    if runs is not None:
        runs.append(run_id)
    return [str(post.get("text", "")) for post in receiver.posts()]


def alerted_events(prefect_server: PrefectServer, run_id: str) -> list[dict[str, object]]:
    body = {
        "filter": {
            "event": {"name": [ALERTED_EVENT]},
            "resource": {"id": [f"prefect.flow-run.{run_id}"]},
        },
        "limit": 10,
    }
    return list(api(prefect_server, "/events/filter", body)["events"])


@pytest.mark.parametrize("case", ["step", "flow", "closed"])
def test_every_failed_run_is_marked_alerted_for_the_automation(
    case: str, prefect_server: PrefectServer, receiver: SlackReceiver
) -> None:
    runs: list[str] = []
    run_case(case, prefect_server, receiver, runs)
    wait_for(
        lambda: alerted_events(prefect_server, runs[0]),
        timeout=60,
        what="the run's alerted event on the server",
    )
    (event,) = alerted_events(prefect_server, runs[0])
    flow = [r for r in event["related"] if r["prefect.resource.role"] == "flow"]
    assert [r["prefect.resource.name"] for r in flow] == ["hooked"]


def test_a_run_that_passed_is_not_marked_alerted(
    prefect_server: PrefectServer, receiver: SlackReceiver
) -> None:
    runs: list[str] = []
    run_case("ok", prefect_server, receiver, runs)
    time.sleep(10)  # the server stores events in batches
    assert alerted_events(prefect_server, runs[0]) == []


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
