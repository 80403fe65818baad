"""The truth matrix's flow scenarios: the scrape-demo deployment run by a Prefect worker on
a Prefect server of its own, in local mode (each run starts its own ``scrapy crawl``
workers), Slack answered by the loopback stub (``harness.slack_receiver``: the real
webhook client speaks to it), embeddings by the OpenAI stand-in.

The run's word is its final state (type and name, e.g. FAILED ``Incomplete``) and the
Slack text about it; it is checked against what the demo shop served and what
Elasticsearch holds, the job document's figures against both. The demo profile's gate
samples pages of the default catalogue, so the flows' shop has its 1,200 products.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from bench.outcome_runs import PRODUCT_PATH, Services
from bench.outcome_verdicts import Check, Outcome, Scenario
from core.config import REPO_ROOT
from core.jobs.index import JOBS_ALIAS
from fingerprints.baselines.store import SITES_DIR
from harness.demo_site import DemoSite
from harness.openai_stub import OpenAIStub
from harness.prefect_server import PrefectServer, PrefectWorker
from harness.slack_receiver import SlackReceiver

FLOW_PRODUCTS = 1200
FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
ALERT_GRACE = 10  # seconds the automation waits for a failed run's own alert
FLOW_BUDGET = 900.0
# Product pages the gate never samples (it samples DM-00001, -00420, -00777, -01200).
GONE = ("/product/DM-0005", "/product/DM-0006")


class FlowStack:
    """A Prefect server and worker, the flows' demo shop, Slack and OpenAI stand-ins;
    Redis and Elasticsearch are the matrix's own (``Services``)."""

    _instance: FlowStack | None = None

    def __init__(self, services: Services) -> None:
        self.services = services
        self.run_dir = services.run_dir / "flows"
        self.sites = self.run_dir / "sites"
        self.stack = contextlib.ExitStack()

    @classmethod
    def shared(cls, services: Services) -> FlowStack:
        """One per matrix run, started by its first flow scenario, stopped at the end."""
        if cls._instance is None or cls._instance.services is not services:
            instance = cls(services)
            instance.start()
            services_stop = services.stop

            def stop() -> None:
                instance.stop()
                services_stop()

            services.stop = stop  # type: ignore[method-assign]
            cls._instance = instance
        return cls._instance

    def start(self) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        enter = self.stack.enter_context
        try:
            self.prefect = enter(PrefectServer(run_dir=self.run_dir))
            self.site = enter(
                DemoSite(run_dir=self.run_dir, products=FLOW_PRODUCTS, name="outcomes-flow-site")
            )
            self.slack = enter(SlackReceiver(run_dir=self.run_dir))
            self.openai = enter(OpenAIStub(dims=16))
            self.register()
            env = {
                "REDIS_URL": self.services.redis.url,
                "ELASTICSEARCH_URL": self.services.es_node.url,
                "DEMO_SITE_URL": self.site.url,
                "SLACK_WEBHOOK_URL": self.slack.url,
                "OPENAI_BASE_URL": self.openai.base_url,
                "OPENAI_API_KEY": self.openai.api_key,
                "EMBEDDING_MODEL": "stub-embedding",
                "PLATFORM_RUN_DIR": str(self.run_dir),
                "FINGERPRINT_SITES_DIR": str(self.sites),
                "GATE_APPROVAL_TIMEOUT": "900",
                "KIBANA_PUBLIC_URL": "http://127.0.0.1:5601",
            }
            enter(
                PrefectWorker(
                    self.prefect, pool="scraping", run_dir=self.run_dir, extra_env=env,
                    cwd=REPO_ROOT,
                )
            )  # fmt: skip
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.stack.close()

    def register(self) -> None:
        """``python -m orchestration.register_flows`` against this server, the automation
        alerting Slack (after ``ALERT_GRACE``)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        env |= {"SLACK_WEBHOOK_URL": self.slack.url, **self.prefect.client_environment()}
        argv = [sys.executable, "-m", "orchestration.register_flows", "--local-workers", "2"]
        argv += ["--alert-grace", str(ALERT_GRACE)]
        done = subprocess.run(
            argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300
        )
        if done.returncode:
            raise RuntimeError(f"register_flows failed: {done.stderr.strip()[-800:]}")

    def reset(self) -> None:
        self.site.reset()
        self.site.control(layout="v1")
        shutil.rmtree(self.sites, ignore_errors=True)
        shutil.copytree(SITES_DIR / "demo", self.sites / "demo")

    # -- Prefect's REST API -------------------------------------------------------------
    def api(self, path: str, body: dict[str, Any] | None = None) -> Any:
        for attempt in range(6):
            request = urllib.request.Request(
                f"{self.prefect.url}{path}",
                data=json.dumps(body).encode() if body is not None else None,
                headers={"Content-Type": "application/json"},
                method="POST" if body is not None else "GET",
            )
            try:
                with urllib.request.urlopen(request, timeout=30) as answer:
                    raw = answer.read()
                return json.loads(raw) if raw else None
            except urllib.error.HTTPError as exc:
                if exc.code not in (502, 503) or attempt == 5:
                    raise
                time.sleep(0.5 * 2**attempt)
        return None

    def trigger(self, **parameters: Any) -> str:
        deployments = self.api("/deployments/filter", {})
        deployment = next(d["id"] for d in deployments if d["name"] == "scrape-demo")
        run = self.api(f"/deployments/{deployment}/create_flow_run", {"parameters": parameters})
        return str(run["id"])

    def wait(self, run_id: str, budget: float) -> dict[str, Any] | None:
        """The run once final; None when it is not within ``budget`` (hung: cancelled)."""
        deadline = time.monotonic() + budget
        while time.monotonic() < deadline:
            run: dict[str, Any] = self.api(f"/flow_runs/{run_id}")
            if run["state"]["type"] in FINAL:
                return run
            time.sleep(1)
        with contextlib.suppress(Exception):
            self.api(f"/flow_runs/{run_id}/set_state", {"state": {"type": "CANCELLING"}})
        return None

    def slack_texts(self, since: int) -> list[str]:
        return [str(post.get("text", "")) for post in self.slack.posts()[since:]]


def job_id_of(run_id: str) -> str:
    return f"demo-{run_id.replace('-', '')[:12]}"


def flow_scenario(
    *,
    expected_state: str,
    slack: str,
    stored: str,
    behaviours: dict[str, Any] | None = None,
    layout: str = "v1",
    parameters: dict[str, Any] | None = None,
    alert_wait: float = 0.0,
    messages: int = 1,
) -> Any:
    """A run of scrape-demo with the shop set up so; ``stored``: "served" (every product
    page the shop answered is in ES) or "none"; ``slack``: what the one Slack message
    about the run starts with or holds."""

    def scenario(services: Services, run_dir: Path) -> Outcome:
        flows = FlowStack.shared(services)
        flows.reset()
        if behaviours:
            flows.site.control(**behaviours)
        if layout != "v1":
            flows.site.control(layout=layout)
        since_posts = len(flows.slack.posts())
        since_log = len(flows.site.access_log())
        run_id = flows.trigger(**(parameters or {}))
        run = flows.wait(run_id, FLOW_BUDGET)
        if alert_wait:
            time.sleep(alert_wait)
        answers = [
            e for e in flows.site.access_log(since_log) if e["path"].startswith(PRODUCT_PATH)
        ]
        served = len({e["path"] for e in answers if e["status"] == 200})
        in_es = services.stored("demo")
        if run is None:
            return Outcome(expected_state, "(still running)", in_es, served, hung=True)
        state = run["state"]
        word = f"{state['type']} {state['name']}"
        job_id = job_id_of(run_id)
        # Runs are one at a time: every message since the trigger is about this one.
        texts = [t for t in flows.slack_texts(since_posts) if "scrape-demo" in t]
        checks = [
            Check("state", word, expected_state),
            Check("Slack messages about the run", len(texts), messages),
            Check(f"Slack holds {slack!r}", any(slack in t for t in texts), True),
        ]
        if stored == "served":
            checks.append(Check("stored in ES", in_es, served))
            document = services.es.options(ignore_status=404).get(
                index=JOBS_ALIAS, id=f"demo:{job_id}"
            )
            figure = int((document.get("_source") or {}).get("items_stored") or 0)
            checks.append(Check("job document items_stored", figure, in_es))
            text = texts[0] if texts else ""
            shown = re.search(r"stored ([\d,]+)", text)
            checks.append(
                Check(
                    "Slack's stored figure",
                    shown[1].replace(",", "") if shown else None,
                    str(in_es),
                )
            )
            pages = re.search(r"of ([\d,]+) pages fetched", text)
            checks.append(
                Check(
                    "Slack's pages fetched = report's",
                    pages[1].replace(",", "") if pages else None,
                    str((document.get("_source") or {}).get("pages")),
                )
            )
            if job_id not in text:
                checks.append(Check("Slack names the job", False, True))
        else:
            checks.append(Check("stored in ES", in_es, 0))
        return Outcome(expected_state, word, in_es, served, checks, note=state.get("message") or "")

    return scenario


FLOWS: tuple[Scenario, ...] = (
    Scenario(
        "flow: completed",
        "scrape-demo end to end: Completed, every product stored, Slack's summary says so",
        flow_scenario(
            expected_state="COMPLETED Completed",
            slack=":white_check_mark: *scrape-demo* completed",
            stored="served",
        ),
        kind="flow",
    ),
    Scenario(
        "flow: pages lost",
        "20 product pages never answer: Incomplete (FAILED), report and Slack name the loss",
        flow_scenario(
            expected_state="FAILED Incomplete",
            slack=":x: *scrape-demo* incomplete: data lost",
            stored="served",
            behaviours={"unavailable": {"rate": 1.0, "attempts": None, "paths": list(GONE)}},
        ),
        kind="flow",
    ),
    Scenario(
        "flow: layout broken",
        "the shop's layout changed, no approval step: FailedClosed, nothing crawled, "
        "Slack's fail-closed alert",
        flow_scenario(
            expected_state="FAILED FailedClosed",
            slack="skipped (fail-closed)",
            stored="none",
            layout="v2",
            parameters={"approval_timeout": 0},
        ),
        kind="flow",
    ),
    Scenario(
        "flow: approval unanswered",
        "the gate's approval nobody answers: the server fails the paused run, the "
        "automation alerts Slack",
        flow_scenario(
            expected_state="FAILED Failed",
            slack="Nobody answered its baseline approval",
            stored="none",
            layout="v2",
            parameters={"approval_timeout": 5},
            alert_wait=ALERT_GRACE + 10,
            messages=2,  # the run's own "waits for approval", then the automation's alert
        ),
        kind="flow",
    ),
)
