"""The scrape flow end to end: real Prefect server and worker, Redis, ES, demo site, Slack.

Deployments are registered in local mode (each run launches its own `scrapy crawl`
workers) except where a test needs compose semantics (always-on workers).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import Elasticsearch

from core.frontier.workers import WorkerRegistry
from core.keys import PlatformKeys
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.openai_stub import OpenAIStub
from harness.prefect_server import PrefectServer, PrefectWorker
from harness.redis_server import RedisServer
from harness.slack_receiver import WEBHOOK_PATH, SlackReceiver
from orchestration.alerts import failed_deliveries
from standins.demo_site.catalog import build_catalog
from tests.crawlers.support import crawl_env, settings_argv, wait_for
from tests.orchestration.prefect_api import api, register_deployments
from tests.orchestration.prefect_ui import RunPage, chromium

REPO_ROOT = Path(__file__).resolve().parents[2]
PRODUCTS = 1200  # the demo profile's gate samples pages of the default catalog
FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


class Stack:
    """What the tests drive: the services, the worker and helpers over Prefect's API."""

    def __init__(
        self,
        prefect: PrefectServer,
        site: DemoSite,
        redis_server: RedisServer,
        es_node: ElasticsearchNode,
        slack: SlackReceiver,
        openai: OpenAIStub,
    ) -> None:
        self.prefect, self.site, self.redis = prefect, site, redis_server
        self.es_node, self.slack, self.openai = es_node, slack, openai

    def deployment_id(self, name: str) -> str:
        deployments = api(self.prefect, "/deployments/filter", {})
        return next(d["id"] for d in deployments if d["name"] == name)

    def trigger(self, name: str, **parameters: Any) -> str:
        run = api(
            self.prefect,
            f"/deployments/{self.deployment_id(name)}/create_flow_run",
            {"parameters": parameters},
        )
        return str(run["id"])

    def flow_run(self, run_id: str) -> dict[str, Any]:
        return dict(api(self.prefect, f"/flow_runs/{run_id}"))

    def wait(self, run_id: str, timeout: float = 300) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run = self.flow_run(run_id)
            if run["state"]["type"] in FINAL:
                return run
            time.sleep(1)
        raise AssertionError(f"flow run {run_id} not finished after {timeout}s")

    def task_states(self, run_id: str) -> dict[str, str]:
        """Task name (without Prefect's ``-<n>`` suffix) -> latest state type."""
        tasks = api(self.prefect, "/task_runs/filter", {"flow_runs": {"id": {"any_": [run_id]}}})
        return {t["name"].rsplit("-", 1)[0]: t["state"]["type"] for t in tasks}

    def artifacts(self, run_id: str) -> list[dict[str, Any]]:
        return list(
            api(
                self.prefect,
                "/artifacts/filter",
                {"artifacts": {"flow_run_id": {"any_": [run_id]}}},
            )
        )

    def es(self) -> Elasticsearch:
        return Elasticsearch(self.es_node.url, request_timeout=60)


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory,
    prefect_server: PrefectServer,
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
) -> Iterator[Stack]:
    run_dir = tmp_path_factory.mktemp("flow-stack")
    # Other modules share the session's Redis and ES: start from a clean slate.
    redis_server.client().flushdb()
    Elasticsearch(es_node.url).indices.delete(
        index="items-demo*,chunks-demo*,platform-jobs*", ignore_unavailable=True
    )
    openai = OpenAIStub(dims=16)
    openai.start()
    with (
        DemoSite(run_dir=run_dir, products=PRODUCTS, name="flow-site") as site,
        SlackReceiver(run_dir=run_dir) as slack,
    ):
        register_deployments(prefect_server)
        worker_env = {
            "REDIS_URL": redis_server.url,
            "ELASTICSEARCH_URL": es_node.url,
            "DEMO_SITE_URL": site.url,
            "SLACK_WEBHOOK_URL": slack.url,
            "OPENAI_BASE_URL": openai.base_url,
            "OPENAI_API_KEY": openai.api_key,
            "EMBEDDING_MODEL": "stub-embedding",
            # The failing-backend test need not wait out six backoffs per batch.
            "EMBEDDING_MAX_RETRIES": "1",
            "PLATFORM_RUN_DIR": str(run_dir),
            # Links only (no Kibana runs here): the report links the job's dashboard.
            "KIBANA_PUBLIC_URL": "http://127.0.0.1:5601",
        }
        with PrefectWorker(
            prefect_server, pool="scraping", run_dir=run_dir, extra_env=worker_env, cwd=REPO_ROOT
        ):
            yield Stack(prefect_server, site, redis_server, es_node, slack, openai)
    openai.stop()


def job_id_of(run_id: str) -> str:
    return f"demo-{run_id.replace('-', '')[:12]}"


def slack_texts(stack: Stack) -> list[str]:
    return [str(post.get("text", "")) for post in stack.slack.posts()]


def final_log_lines(stack: Stack, run_id: str) -> list[str]:
    """The run's last 200 log lines, oldest first, once the flow's own "Finished in state"
    line reached the API (lines are shipped in batches, after the state; a task's
    "Finished in state" line is not the flow's)."""

    def records() -> list[dict[str, Any]]:
        body = {"logs": {"flow_run_id": {"any_": [run_id]}}, "sort": "TIMESTAMP_DESC"}
        return list(reversed(api(stack.prefect, "/logs/filter", body | {"limit": 200})))

    def finished() -> bool:
        return any(
            log["task_run_id"] is None and log["message"].startswith("Finished in state")
            for log in records()
        )

    wait_for(finished, timeout=60, what="the flow's last log line")
    return [log["message"] for log in records()]


def product_fetches(stack: Stack) -> int:
    return sum(1 for e in stack.site.access_log() if e["path"].startswith("/product/"))


def latest_artifact(stack: Stack, run_id: str, key: str) -> dict[str, Any] | None:
    found = [a for a in stack.artifacts(run_id) if a.get("key") == key]
    return max(found, key=lambda a: a["updated"]) if found else None


def test_triggered_deployment_runs_end_to_end(stack: Stack, tmp_path: Path) -> None:
    """A run end to end, watched as an operator would: headless Chromium on the Prefect
    UI shows the crawl's progress artifact between 0 and 100% while the run is in
    progress and at 100% after it, and the stats table with the run's figures
    (screenshots in the test's temp dir)."""
    # Every page 300 ms slower: the crawl lasts long enough to be watched mid-run.
    stack.site.control(slow={"rate": 1.0, "ms": 300})
    try:
        run_id = stack.trigger("scrape-demo")
        wait_for(
            lambda: (
                0
                < float(
                    (latest_artifact(stack, run_id, "scrape-demo-crawl-progress") or {}).get("data")
                    or 0
                )
                < 50
            ),
            timeout=240,
            what="the crawl's progress artifact to leave 0%",
        )
        with chromium() as browser:
            ui = RunPage(browser, stack.prefect.ui_url, run_id, tmp_path)
            ui.open_artifact("scrape-demo-crawl-progress")
            mid_run = ui.progress()
            ui.screenshot("crawl-progress-mid-run")
            live = latest_artifact(stack, run_id, "scrape-demo-crawl-live")
            (tmp_path / "mid-run-table.json").write_text(json.dumps(live and live["data"]))
            assert stack.flow_run(run_id)["state"]["type"] == "RUNNING"
            assert 0 < mid_run < 100, mid_run
            run = stack.wait(run_id)
            assert run["state"]["type"] == "COMPLETED", run["state"]
            ui.reload()
            assert ui.progress() == 100
            ui.screenshot("crawl-progress-done")
            ui.open_artifact("scrape-demo-stats")
            table = ui.wait_for_text(rf"items scraped\s+{PRODUCTS}\b")
            ui.screenshot("report-stats")
    finally:
        stack.site.control(slow=None)
    for metric in ("items scraped", "new", "stored", "block rate"):
        assert metric in table
    assert re.search(rf"items scraped\s+{PRODUCTS}\b", table), table[-2000:]
    assert re.search(rf"stored\s+{PRODUCTS}\b", table)
    assert live is not None
    rows = json.loads(live["data"]) if isinstance(live["data"], str) else live["data"]
    assert any(row["metric"] == "pages fetched" and row["value"] > 0 for row in rows)
    job_id = job_id_of(run_id)
    es = stack.es()
    es.indices.refresh(index="items-demo,chunks-demo")
    assert es.count(index="items-demo")["count"] == PRODUCTS
    products = es.search(
        index="chunks-demo",
        size=0,
        aggs={"items": {"cardinality": {"field": "item_key"}}},
    )["aggregations"]["items"]["value"]
    assert products == PRODUCTS
    job = es.get(index="jobs", id=f"demo:{job_id}")["_source"]
    assert job["status"] == "completed" and job["items_scraped"] == PRODUCTS
    assert job["items_new"] == PRODUCTS
    keys = {artifact["key"] for artifact in stack.artifacts(run_id)}
    assert {"scrape-demo-report", "scrape-demo-stats", "scrape-demo-producer"} <= keys
    assert {"scrape-demo-llm-progress", "scrape-demo-llm-live"} <= keys
    report = latest_artifact(stack, run_id, "scrape-demo-report")
    assert report is not None
    assert "`items-demo`" in report["data"] and "`chunks-demo`" in report["data"]
    assert "[Kibana dashboard filtered to job" in report["data"]
    assert f"job_id:%22{job_id}%22" in report["data"]
    # Field coverage of the job's stored items, judged against the demo's coverage.json.
    assert "## Field coverage" in report["data"], report["data"]
    assert "| field coverage | ok: " in report["data"] and f"({PRODUCTS} items)" in report["data"]
    llm = latest_artifact(stack, run_id, "scrape-demo-llm-progress")
    assert llm is not None and float(llm["data"]) == 100
    summary = [text for text in slack_texts(stack) if job_id in text and "completed" in text]
    assert summary, slack_texts(stack)
    assert f"items scraped: *{PRODUCTS}* (new {PRODUCTS}, changed 0, unchanged 0)" in summary[-1]
    assert "block rate: 0.00% (0 of " in summary[-1]
    assert summary[-1].startswith(":white_check_mark: *scrape-demo* completed")
    assert "• field coverage: ok: " in summary[-1], summary[-1]
    assert not [text for text in slack_texts(stack) if "field coverage dropped" in text]


def test_two_runs_at_once_never_overlap(stack: Stack) -> None:
    es = stack.es()
    first, second = stack.trigger("scrape-demo"), stack.trigger("scrape-demo")
    overlaps = 0
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        states = [stack.flow_run(run)["state"]["type"] for run in (first, second)]
        overlaps += states == ["RUNNING", "RUNNING"]
        if all(state in FINAL for state in states):
            break
        time.sleep(0.5)
    assert overlaps == 0
    assert [stack.flow_run(run)["state"]["type"] for run in (first, second)] == [
        "COMPLETED",
        "COMPLETED",
    ]
    es.indices.refresh(index="items-demo")
    assert es.count(index="items-demo")["count"] == PRODUCTS  # deterministic ids: no dupes


def stored_counts(es: Elasticsearch) -> tuple[int, int]:
    """(items, job documents) stored for the demo; (0, 0) before any run made the indices
    (this case may run first on its worker)."""
    counts = []
    for index in ("items-demo", "jobs"):
        exists = es.indices.exists(index=index)
        if exists:
            es.indices.refresh(index=index)
        counts.append(es.count(index=index)["count"] if exists else 0)
    return counts[0], counts[1]


def test_gate_failure_skips_the_scrape_fail_closed(stack: Stack) -> None:
    es = stack.es()
    before = stored_counts(es)
    stack.site.control(layout="v2")
    try:
        run_id = stack.trigger("scrape-demo")
        run = stack.wait(run_id)
    finally:
        stack.site.control(layout="v1")
    assert run["state"]["type"] == "FAILED" and run["state"]["name"] == "FailedClosed"
    job_id = job_id_of(run_id)
    server = stack.redis.client()
    assert server.llen("{demo}:start_urls") == 0 and server.zcard("{demo}:priorities") == 0
    assert not server.exists(f"{{demo}}:job:{job_id}:stats")
    assert stored_counts(es) == before
    assert "producer" not in stack.task_states(run_id)
    (alert,) = [text for text in slack_texts(stack) if "skipped (fail-closed)" in text]
    # The fix that works: the spider updated, then fixtures and baseline from live pages.
    fix = f"`python -m fingerprints baseline demo --from-url {stack.site.url.rstrip('/')}`"
    assert fix in alert, alert
    # The run's log ends on its state, with no traceback of the state it returned.
    lines = final_log_lines(stack, run_id)
    assert lines[-1].startswith("Finished in state FailedClosed("), lines[-3:]
    assert not [line for line in lines if "Traceback" in line or "unexpected exception" in line]


def test_preflight_fails_fast_when_workers_were_killed(stack: Stack, tmp_path: Path) -> None:
    settings = {
        "REDIS_URL": stack.redis.url,
        "ELASTICSEARCH_URL": stack.es_node.url,
        "FRONTIER_HEARTBEAT_TTL": 2,
        "LOG_FILE": tmp_path / "w.log",
    }
    argv = [sys.executable, "-m", "scrapy", "crawl", "demo", "-a", "always_on=true"]
    worker = subprocess.Popen(
        [*argv, *settings_argv(settings)],
        cwd=REPO_ROOT,
        env=crawl_env(),
    )
    server = stack.redis.client()
    deadline = time.monotonic() + 60
    while not server.smembers("{demo}:workers") and time.monotonic() < deadline:
        time.sleep(0.2)
    worker.kill()  # the always-on worker dies before the scheduled run
    worker.wait()
    registry = WorkerRegistry(server, "demo")
    wait_for(lambda: not registry.live(), timeout=30, what="the dead worker's heartbeat to expire")
    started = time.monotonic()
    run_id = stack.trigger("scrape-demo", local_workers=0)
    run = stack.wait(run_id, timeout=120)
    assert run["state"]["type"] == "FAILED"
    assert time.monotonic() - started < 90
    assert "no live consumers for {demo}:start_urls, {demo}:queue:*" in run["state"]["message"]
    assert any("failed at step *preflight*" in text for text in slack_texts(stack))


def test_llm_failure_is_retried_without_recrawling(stack: Stack) -> None:
    # A new revision of the shop: changed and new products give the LLM step work to do
    # (unchanged items are never re-embedded, so it would not call the backend at all).
    stack.site.control(revision=1)
    stack.openai.fail_next(500, times=100_000)
    run_id = stack.trigger("scrape-demo")
    run = stack.wait(run_id, timeout=600)
    assert run["state"]["type"] == "FAILED", run["state"]
    assert stack.task_states(run_id)["llm-process"] == "FAILED"
    assert any("failed at step *llm-process*" in text for text in slack_texts(stack))
    # The run's own story names the failed step, its error and its last log lines.
    failure = latest_artifact(stack, run_id, "scrape-demo-failure")
    assert failure is not None
    assert failure["data"].startswith("# scrape-demo: failed in step `llm-process`")
    assert "Last log lines of `llm-process`" in failure["data"]
    fetched = product_fetches(stack)

    stack.openai.reset()
    api(
        stack.prefect,
        f"/flow_runs/{run_id}/set_state",
        {"state": {"type": "SCHEDULED", "name": "AwaitingRetry"}, "force": True},
    )
    run = stack.wait(run_id, timeout=600)
    assert run["state"]["type"] == "COMPLETED", run["state"]
    assert product_fetches(stack) == fetched  # nothing crawled again
    es = stack.es()
    es.indices.refresh(index="jobs")
    job = es.get(index="jobs", id=f"demo:{job_id_of(run_id)}")["_source"]
    assert job["status"] == "completed"
    assert job["items_scraped"] == len(build_catalog().revised(1).products)
    touched = job["items_new"] + job["items_changed"]
    assert touched > 0
    es.indices.refresh(index="chunks-demo")
    chunked = es.search(
        index="chunks-demo",
        size=0,
        query={"term": {"job_id": job_id_of(run_id)}},
        aggs={"items": {"cardinality": {"field": "item_key"}}},
    )["aggregations"]["items"]["value"]
    assert chunked == touched  # the retried step embedded exactly the job's new/changed items


def test_slack_down_a_complete_run_stays_completed_and_the_health_check_reports_it(
    stack: Stack,
) -> None:
    server = stack.redis.client()
    server.delete(PlatformKeys.alerts_failed)
    stack.slack.stop()  # the webhook refuses connections: every attempt fails
    try:
        run_id = stack.trigger("scrape-demo")
        run = stack.wait(run_id)
    finally:
        stack.slack.start()
    assert run["state"]["type"] == "COMPLETED", run["state"]
    job_id = job_id_of(run_id)
    job = stack.es().get(index="jobs", id=f"demo:{job_id}")["_source"]
    assert (job["alerts_failed"], job["extra"]["alerts_failed"]) == (1, ["job_summary"])
    (entry,) = failed_deliveries(server)
    assert (entry["template"], entry["site"], entry["job_id"]) == ("job_summary", "demo", job_id)

    def run_logs() -> list[dict[str, Any]]:
        body = {"logs": {"flow_run_id": {"any_": [run_id]}}, "limit": 200}
        return list(api(stack.prefect, "/logs/filter", body))

    # One WARNING in the run's log names the alert and the error class; no hook error,
    # and never the webhook URL (a secret).
    wait_for(
        lambda: any("job_summary alert" in log["message"] for log in run_logs()),
        timeout=30,
        what="the undelivered summary's line in the run's log",
    )
    logs = run_logs()
    assert [log["message"] for log in logs if log["level"] >= 30] == [
        f"Slack job_summary alert not delivered after 4 attempts: {entry['error']}"
    ]
    assert not any("error was encountered while running hook" in log["message"] for log in logs)
    assert not any(WEBHOOK_PATH in log["message"] for log in logs)

    health_id = stack.trigger("daily-health-check")
    health_run = stack.wait(health_id, timeout=120)
    # Unhealthy anyway (the scheduled sites were never scraped here); the report names it.
    assert health_run["state"]["name"] == "Unhealthy", health_run["state"]
    (report,) = [a["data"] for a in stack.artifacts(health_id) if a["key"] == "daily-health-check"]
    assert f"| job_summary | demo | {job_id} | {entry['error']} |" in report
    assert any(
        "1 Slack alert(s) not delivered since the last check (job_summary x1)" in text
        for text in slack_texts(stack)
    )
    assert failed_deliveries(server) == []  # reported once: cleared for the next check
