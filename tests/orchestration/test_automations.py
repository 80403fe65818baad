"""The automation that alerts a failed run whose own alert never came
(orchestration/automations.py), on the real Prefect server with the Slack stand-in: it is
registered with the deployments, alerts a run the server failed (its process gone), stays
quiet for a run whose hook marked it alerted, and goes away without SLACK_WEBHOOK_URL.

The runs here are created from the scrape deployment and never picked up (no worker
serves this module): their states are set through the API, as the server's own services
set them; the alerted event is the hook's own (``orchestration.hooks.alerted_event``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prefect.client.schemas.objects import FlowRun
from prefect.server.events.actions import SendNotification as ServerSendNotification
from prefect.states import Failed

from core.config import OperatorError
from harness.prefect_server import PrefectServer
from harness.slack_receiver import WEBHOOK_PATH, SlackReceiver
from orchestration import register_flows
from orchestration.automations import (
    AUTOMATION_NAME,
    BLOCK_NAME,
    TEMPLATE,
    WATCHED_STATES,
    trigger,
)
from orchestration.hooks import ALERTED_EVENT, alerted_event
from tests.orchestration.prefect_api import api, register_deployments

GRACE = 10  # seconds the automation waits for a run's own alert (the least Prefect takes)
NEVER_RESUMED = "The flow was paused and never resumed."


@pytest.fixture(scope="module")
def slack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlackReceiver]:
    with SlackReceiver(run_dir=tmp_path_factory.mktemp("automation-slack")) as receiver:
        yield receiver


@pytest.fixture(scope="module")
def registered(prefect_server: PrefectServer, slack: SlackReceiver) -> str:
    return register_deployments(
        prefect_server,
        extra_env={"SLACK_WEBHOOK_URL": slack.url},
        options=["--alert-grace", str(GRACE)],
    )


def new_run(server: PrefectServer) -> dict[str, Any]:
    deployments = api(server, "/deployments/filter", {})
    deployment = next(d for d in deployments if d["name"] == "scrape-demo")
    return dict(api(server, f"/deployments/{deployment['id']}/create_flow_run", {}))


def fail(server: PrefectServer, run: dict[str, Any], message: str, name: str = "Failed") -> None:
    state = {"type": "FAILED", "name": name, "message": message}
    answer = api(server, f"/flow_runs/{run['id']}/set_state", {"state": state, "force": True})
    assert answer["status"] == "ACCEPT", answer


def posts_naming(slack: SlackReceiver, run: dict[str, Any]) -> list[str]:
    texts = [str(post.get("text", "")) for post in slack.posts()]
    return [text for text in texts if f"`{run['name']}`" in text]


def wait_past_grace(slack: SlackReceiver, run: dict[str, Any], timeout: float = 60) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not posts_naming(slack, run):
        time.sleep(1)
    return posts_naming(slack, run)


def test_the_trigger_watches_every_failed_state_the_flows_end_in() -> None:
    named = {"FailedClosed", "Incomplete", "NothingStored", "UnknownSite", "StructureChanged"}
    assert {"Failed", "Crashed", "Unhealthy", *named} <= set(WATCHED_STATES)
    watched = trigger(["scrape-site"], grace=30)
    assert watched.after == {f"prefect.flow-run.{state}" for state in WATCHED_STATES}
    assert watched.expect == {ALERTED_EVENT} and watched.for_each == {"prefect.resource.id"}
    # The message is a template the server accepts (its sandbox, its filters).
    ServerSendNotification(block_document_id=uuid.uuid4(), body=TEMPLATE.read_text())


def test_a_grace_prefect_cannot_wait_is_refused_in_one_line() -> None:
    with pytest.raises(OperatorError) as refused:
        register_flows.main(["--alert-grace", "5"])
    assert refused.value.message == (
        "--alert-grace 5: Prefect waits at least 10 s for an expected event"
    )


def test_registration_names_the_automation_and_keeps_the_webhook_secret(
    prefect_server: PrefectServer, registered: str, slack: SlackReceiver
) -> None:
    assert (
        f"automation {AUTOMATION_NAME}: Slack alert for failed runs of check-site-versions, "
        f"daily-health-check, scrape-site without their own alert within {GRACE}s"
    ) in registered.splitlines()
    (automation,) = api(prefect_server, "/automations/filter", {})
    assert automation["name"] == AUTOMATION_NAME and automation["enabled"]
    assert automation["trigger"]["posture"] == "Proactive"
    # Registering again (every compose worker start does) updates the same automation.
    register_deployments(
        prefect_server,
        extra_env={"SLACK_WEBHOOK_URL": slack.url},
        options=["--alert-grace", str(GRACE)],
    )
    (again,) = api(prefect_server, "/automations/filter", {})
    assert again["id"] == automation["id"]
    blocks = api(prefect_server, "/block_documents/filter", {})
    (block,) = [b for b in blocks if b["name"] == BLOCK_NAME]
    assert WEBHOOK_PATH not in str(block) and slack.url not in str(block)


def test_a_run_the_server_failed_is_alerted_once_by_the_automation(
    prefect_server: PrefectServer, registered: str, slack: SlackReceiver
) -> None:
    run = new_run(prefect_server)
    fail(prefect_server, run, NEVER_RESUMED)
    (text,) = wait_past_grace(slack, run)
    lines = text.splitlines()
    assert lines[0] == (
        f":rotating_light: *scrape-demo*: run `{run['name']}` ended *Failed* (site demo), "
        "and no alert came from the run itself"
    )
    assert lines[1] == f"```{NEVER_RESUMED}```"
    assert lines[2].startswith("Nobody answered its baseline approval")
    time.sleep(GRACE)
    assert len(posts_naming(slack, run)) == 1


def test_a_run_whose_hook_alerted_gets_no_second_alert(
    prefect_server: PrefectServer, registered: str, slack: SlackReceiver
) -> None:
    run = new_run(prefect_server)
    fail(prefect_server, run, "structure gate: structure changed", name="FailedClosed")
    flow_run = FlowRun(id=uuid.UUID(run["id"]), name=run["name"], flow_id=run["flow_id"])
    event = alerted_event("scrape-site", flow_run, Failed(name="FailedClosed"))
    api(prefect_server, "/events", [event.model_dump(mode="json")])
    control = new_run(prefect_server)  # the same failure without the hook's event: alerted
    fail(prefect_server, control, "structure gate: structure changed", name="FailedClosed")
    assert wait_past_grace(slack, control)
    assert posts_naming(slack, run) == []


def test_without_a_webhook_the_automation_and_its_block_go(
    prefect_server: PrefectServer, registered: str, tmp_path: Path
) -> None:
    printed = register_deployments(prefect_server)
    assert (
        f"automation {AUTOMATION_NAME}: not registered (SLACK_WEBHOOK_URL is not set)"
        in printed.splitlines()
    )
    assert api(prefect_server, "/automations/filter", {}) == []
    blocks = api(prefect_server, "/block_documents/filter", {})
    assert not [b for b in blocks if b["name"] == BLOCK_NAME]
