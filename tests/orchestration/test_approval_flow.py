"""Approving a new baseline from the Prefect UI: real Prefect server and worker, Redis, ES,
the demo shop in layout v2 (selectors broken: the gate fails closed with a proposal).

Runs are resumed through the API exactly as the UI's "Resume" form does (POST
/flow_runs/{id}/resume with ``run_input``). The worker reads and writes baselines in a
temporary copy of fingerprints/sites (FINGERPRINT_SITES_DIR): the repository's
baseline.json is never written.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import Elasticsearch

from fingerprints.baselines.store import SITES_DIR
from fingerprints.baselines.versions import baseline_history
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.openai_stub import OpenAIStub
from harness.prefect_server import PrefectServer, PrefectWorker
from harness.redis_server import RedisServer
from harness.slack_receiver import SlackReceiver
from tests.orchestration.prefect_api import api, register_deployments
from tests.orchestration.test_scrape_flow import FINAL, PRODUCTS, Stack, job_id_of, slack_texts

REPO_ROOT = Path(__file__).resolve().parents[2]
REPO_BASELINE = SITES_DIR / "demo" / "baseline.json"
ALERT_GRACE = 10  # seconds the automation waits for a failed run's own alert


class ApprovalStack(Stack):
    sites: Path

    def wait_for_state(self, run_id: str, state_type: str, timeout: float = 300) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run = self.flow_run(run_id)
            if run["state"]["type"] == state_type:
                return run
            assert run["state"]["type"] not in FINAL, run["state"]
            time.sleep(1)
        raise AssertionError(f"flow run {run_id} not {state_type} after {timeout}s")

    def resume(self, run_id: str, run_input: dict[str, Any]) -> dict[str, Any]:
        """What the UI's Resume form sends."""
        return dict(api(self.prefect, f"/flow_runs/{run_id}/resume", {"run_input": run_input}))

    def state_names(self, run_id: str) -> list[str]:
        """Every state the run went through, oldest first."""
        states = api(self.prefect, f"/flow_run_states/?flow_run_id={run_id}")
        return [state["name"] for state in sorted(states, key=lambda s: s["timestamp"])]

    def reset_baselines(self) -> None:
        shutil.rmtree(self.sites, ignore_errors=True)
        shutil.copytree(SITES_DIR / "demo", self.sites / "demo")


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory,
    prefect_server: PrefectServer,
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
) -> Iterator[ApprovalStack]:
    run_dir = tmp_path_factory.mktemp("approval-stack")
    sites = run_dir / "sites"
    redis_server.client().flushdb()
    Elasticsearch(es_node.url).indices.delete(
        index="items-demo*,chunks-demo*,platform-jobs*", ignore_unavailable=True
    )
    openai = OpenAIStub(dims=16)
    openai.start()
    with (
        DemoSite(run_dir=run_dir, products=PRODUCTS, name="approval-site", layout="v2") as site,
        SlackReceiver(run_dir=run_dir) as slack,
    ):
        # The automation alerts a run its own hooks could not (an approval nobody answered).
        register_deployments(
            prefect_server,
            extra_env={"SLACK_WEBHOOK_URL": slack.url},
            options=["--alert-grace", str(ALERT_GRACE)],
        )
        worker_env = {
            "REDIS_URL": redis_server.url,
            "ELASTICSEARCH_URL": es_node.url,
            "DEMO_SITE_URL": site.url,
            "SLACK_WEBHOOK_URL": slack.url,
            "OPENAI_BASE_URL": openai.base_url,
            "OPENAI_API_KEY": openai.api_key,
            "EMBEDDING_MODEL": "stub-embedding",
            "PLATFORM_RUN_DIR": str(run_dir),
            "FINGERPRINT_SITES_DIR": str(sites),
            "GATE_APPROVAL_TIMEOUT": "900",
        }
        with PrefectWorker(
            prefect_server, pool="scraping", run_dir=run_dir, extra_env=worker_env, cwd=REPO_ROOT
        ):
            approval_stack = ApprovalStack(
                prefect_server, site, redis_server, es_node, slack, openai
            )
            approval_stack.sites = sites
            yield approval_stack
    openai.stop()


@pytest.fixture
def baselines(stack: ApprovalStack) -> Iterator[Path]:
    """A fresh copy of the repository's demo baseline for each test; the repository's own
    baseline.json is the same after the test."""
    before = REPO_BASELINE.read_bytes()
    stack.reset_baselines()
    yield stack.sites
    assert REPO_BASELINE.read_bytes() == before


def unattended_alerts(stack: Stack, run: dict[str, Any], *, wait: bool = True) -> list[str]:
    """The automation's alerts of ``run`` (a failed run without an alert of its own), once
    its grace has passed (``wait``)."""
    if wait:
        time.sleep(ALERT_GRACE + 10)  # the grace, and the server's evaluation every 5 s
    return [text for text in slack_texts(stack) if f"run `{run['name']}` ended" in text]


def structure_alerts(stack: Stack) -> list[str]:
    texts = [str(post.get("text", "")) for post in stack.slack.posts()]
    return [text for text in texts if "scrape-demo waits for approval" in text]


def test_an_accept_of_a_layout_that_extracts_nothing_is_refused_unless_overridden(
    stack: ApprovalStack, baselines: Path
) -> None:
    original = (baselines / "demo" / "baseline.json").read_text()
    alerts = len(structure_alerts(stack))
    run_id = stack.trigger("scrape-demo")

    run = stack.wait_for_state(run_id, "PAUSED")
    assert run["state"]["name"] == "Suspended", run["state"]
    # Suspended, not paused: the run's process is gone and the input it waits for is
    # declared (the UI renders the form from this schema, with the description above it).
    details = run["state"]["state_details"]
    assert details["pause_reschedule"] is True and details["pause_timeout"]
    keyset = details["run_input_keyset"]
    schema = api(stack.prefect, f"/flow_runs/{run_id}/input/{keyset['schema']}")
    assert schema["required"] == ["decision"]
    assert schema["properties"]["decision"]["enum"] == ["accept", "reject"]
    assert schema["properties"]["accept_empty"]["default"] is False
    description = api(stack.prefect, f"/flow_runs/{run_id}/input/{keyset['description']}")
    # The form leads with what extraction lost, in full lines (not cut in a code block).
    assert description.startswith("**scrape-demo: the structure gate failed closed")
    lead = description.split("```")[0]
    assert "**What extraction lost on the sample:**" in lead
    assert "- product: extraction yielded nothing on" in lead
    assert "**accept is refused** while the proposed layout extracts nothing from" in lead
    assert (baselines / "demo" / "baseline.json").read_text() == original
    assert "producer" not in stack.task_states(run_id)

    # A plain accept of a layout that extracts nothing is refused: the run fails closed.
    answer = stack.resume(run_id, {"decision": "accept", "note": "v2 is the new shop"})
    assert answer["status"] == "ACCEPT", answer
    run = stack.wait(run_id, timeout=300)
    assert (run["state"]["type"], run["state"]["name"]) == ("FAILED", "FailedClosed")
    assert "extracts nothing from" in run["state"]["message"]
    assert "accept_empty" in run["state"]["message"]
    assert (baselines / "demo" / "baseline.json").read_text() == original
    assert baseline_history("demo", sites_dir=baselines) == []
    assert "producer" not in stack.task_states(run_id)

    # The explicit override: the baseline is accepted, and the run says what it lost.
    run_id = stack.trigger("scrape-demo")
    stack.wait_for_state(run_id, "PAUSED")
    note = {"decision": "accept", "note": "v2 is the new shop", "accept_empty": True}
    assert stack.resume(run_id, note)["status"] == "ACCEPT"
    run = stack.wait(run_id, timeout=600)
    # Accepted, crawled, and nothing came out of the product pages: never a success.
    assert (run["state"]["type"], run["state"]["name"]) == ("FAILED", "NothingStored"), run["state"]
    # The crawl's own line (core.jobs.outcome): pages read, none of their items extracted.
    message = run["state"]["message"]
    assert message.startswith("0 items: ") and "no item extracted" in message, message
    assert "could not be parsed (demo/product_unparsed " in message, message
    tasks = stack.task_states(run_id)
    assert tasks["accept-baseline"] == "COMPLETED" and tasks["report"] == "COMPLETED"

    accepted = json.loads((baselines / "demo" / "baseline.json").read_text())
    (version,) = baseline_history("demo", sites_dir=baselines)
    assert version.note == "v2 is the new shop" and run_id in version.by
    assert version.previous is not None
    assert (baselines / "demo" / version.previous).read_text() == original
    assert accepted["site"] == "demo" and accepted != json.loads(original)
    # One approval alert per run, not a second one when it resumed.
    assert len(structure_alerts(stack)) == alerts + 2

    job = stack.es().get(index="jobs", id=f"demo:{job_id_of(run_id)}")["_source"]
    assert job["pages_unparsed"] == int(job["counters"]["demo/product_unparsed"]) > 0
    assert (job["status"], job["items_stored"], job["items_removed"]) == ("failed", 0, 0)
    assert "page(s) could not be parsed" in job["extra"]["removals_skipped"]
    # The report is written all the same, and leads with the run's state and why.
    report = {a["key"]: a for a in stack.artifacts(run_id)}["scrape-demo-report"]["data"]
    assert f"**NothingStored:** {run['state']['message']}" in report
    summary = [text for text in slack_texts(stack) if f"job `{job_id_of(run_id)}`" in text]
    assert len(summary) == 1, slack_texts(stack)  # the job summary is the run's one alert
    assert summary[0].startswith(":x: *scrape-demo* stored nothing")
    assert f"• :no_entry: {run['state']['message']}" in summary[0]
    assert not unattended_alerts(stack, run)


def test_suspended_runs_free_the_slot_reject_and_timeout_fail_closed(
    stack: ApprovalStack, baselines: Path
) -> None:
    original = (baselines / "demo" / "baseline.json").read_text()
    rejected = stack.trigger("scrape-demo")
    stack.wait_for_state(rejected, "PAUSED")
    # One scrape of a site at a time: this run can only start because the first one,
    # suspended, gave its slot back. Nobody answers it: the server fails it at its deadline.
    unanswered = stack.trigger("scrape-demo", approval_timeout=5)
    run = stack.wait(unanswered, timeout=300)
    assert run["state"]["type"] == "FAILED", run["state"]
    assert "never resumed" in run["state"]["message"]
    assert "Suspended" in stack.state_names(unanswered)
    assert stack.flow_run(rejected)["state"]["name"] == "Suspended"  # still waiting

    answer = stack.resume(rejected, {"decision": "reject", "note": "the shop is broken"})
    assert answer["status"] == "ACCEPT", answer
    run = stack.wait(rejected, timeout=300)
    assert (run["state"]["type"], run["state"]["name"]) == ("FAILED", "FailedClosed")
    assert run["state"]["message"] == (
        "structure gate: the proposed baseline of demo was rejected in the Prefect UI: "
        "the shop is broken"
    )
    # The unanswered run's process was gone when the server failed it: the automation
    # alerted it, once; the rejected run's own hooks ran, so the automation did not.
    (alert,) = unattended_alerts(stack, stack.flow_run(unanswered))
    assert (
        "ended *Failed* (site demo)" in alert and "Nobody answered its baseline approval" in alert
    )
    assert unattended_alerts(stack, run) == []
    for run_id in (rejected, unanswered):
        tasks = stack.task_states(run_id)
        assert "producer" not in tasks and "accept-baseline" not in tasks
    assert (baselines / "demo" / "baseline.json").read_text() == original
    assert baseline_history("demo", sites_dir=baselines) == []
    server = stack.redis.client()
    assert server.llen("{demo}:start_urls") == 0 and server.zcard("{demo}:priorities") == 0
