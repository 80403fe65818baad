"""Repair suggestions in the structure alert: the gate's failed fields in, a markdown
artifact and Slack lines out; through a local OpenAI-compatible chat endpoint that
answers as a model would, and, end to end, a flow on the real Prefect server sending the
alert for the demo shop switched to layout v2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.config import PlatformSettings
from harness.demo_site import DemoSite
from harness.openai_stub import OpenAIStub
from harness.prefect_server import PrefectServer
from harness.slack_receiver import SlackReceiver
from orchestration.alerts import render
from orchestration.repairs import artifact_key, failed_fields, repair_suggestions
from standins.demo_site.catalog import build_catalog
from standins.demo_site.pages import product_page
from tests.fingerprints.repair.test_suggestions import SECRET, answering_model
from tests.orchestration.prefect_api import api

REPO_ROOT = Path(__file__).resolve().parents[2]
SKUS = ("DM-00001", "DM-00420")
ALERT = {
    "site": "demo",
    "flow": "scrape",
    "status": "structure_changed",
    "waiting_until": None,
    "status_label": "structure changed",
    "reason": "structure changed: product (similarity 0.412 < 0.85)",
    "page_types": [],
    "run_url": None,
    "approvable": False,
    "site_url": "http://127.0.0.1:8000",
}


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub(api_key=SECRET) as server:
        server.chat_answer = answering_model
        yield server


def gate_result(mode: str, urls: list[str], fields: list[str]) -> dict[str, Any]:
    return {
        "passed": False,
        "status": "structure_changed",
        "verdict": "structure_changed",
        "site": "demo",
        "mode": mode,
        "reason": "structure changed: product (similarity 0.412 < 0.85)",
        "page_types": {
            "product": {
                "passed": False,
                "threshold": 0.85,
                "similarity": 0.412,
                "changed_features": ["selectors"],
                "pages": [{"url": url, "outcome": "changed", "reason": "-"} for url in urls],
            }
        },
        "extraction": {"failed_fields": {"product": fields}},
    }


@pytest.fixture
def v2_fixtures(tmp_path: Path) -> tuple[Path, list[str]]:
    """A sites directory whose demo fixtures are v2 product pages (the fixture check)."""
    catalog = build_catalog()
    paths = []
    for sku in SKUS:
        path = tmp_path / "demo" / "product" / f"{sku}.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(product_page(catalog, sku, "v2", "http://127.0.0.1:8000") or "")
        paths.append(f"product/{sku}.html")
    return tmp_path, paths


def test_failed_fields_come_from_the_gate_results_extraction() -> None:
    result = gate_result("live", [], ["name", "price"])
    assert failed_fields(result) == {"product": ["name", "price"]}
    assert failed_fields({"status": "blocked"}) == {}
    assert failed_fields({"extraction": None}) == {}
    assert failed_fields({"extraction": {"failed_fields": {"product": []}}}) == {}
    # Nothing failed: nothing asked, no lines.
    assert repair_suggestions("demo", {"status": "blocked"}) is None
    assert artifact_key("booking_com") == "repair-suggestions-booking-com"


def test_suggestions_for_the_fixture_check_become_slack_lines_and_a_table(
    stub: OpenAIStub, v2_fixtures: tuple[Path, list[str]]
) -> None:
    sites_dir, paths = v2_fixtures
    settings = PlatformSettings(
        openai_base_url=stub.base_url, openai_api_key=SECRET, chat_model="stub-chat-2"
    )
    outcome = repair_suggestions(
        "demo",
        gate_result("fixtures", paths, ["name", "price"]),
        settings=settings,
        sites_dir=sites_dir,
    )
    assert outcome is not None
    assert [r.field for r in outcome.report.kept] == ["name"]
    assert [d.field for d in outcome.report.discarded] == ["price"]
    (request,) = stub.chat_requests
    assert request["model"] == "stub-chat-2"
    # The profile's selector of the same name is the old rule.
    assert outcome.report.discarded[0].rule == "css: span.pdp__amount::text"
    assert '"old_rule": ".product-price .price-value"' in request["messages"][-1]["content"]
    catalog = build_catalog()
    first, second = (catalog.by_sku[sku].name for sku in SKUS)
    assert "*product.name*: `css: h2.pdp__title::text`" in outcome.slack_text
    assert f"e.g. `{first}`; `{second}`" in outcome.slack_text
    assert "1 other suggestion(s) discarded" in outcome.slack_text
    assert "| product | name | - | css: h2.pdp__title::text |" in outcome.markdown
    assert SECRET not in outcome.slack_text + outcome.markdown

    alert = render("structure_change", **ALERT, repairs=outcome.slack_text)
    assert alert.endswith(outcome.slack_text)
    assert render("structure_change", **ALERT, repairs="").endswith(
        "`python -m fingerprints baseline demo --from-url http://127.0.0.1:8000`, and commit "
        "them with the change."
    )


def test_without_an_endpoint_the_alert_has_no_lines_and_nothing_is_fetched() -> None:
    settings = PlatformSettings(openai_base_url=None, openai_api_key=None)
    # Live URLs nobody serves: fetching them would take the sampler's timeout.
    result = gate_result("live", ["http://127.0.0.1:9/product/DM-00001"], ["name"])
    outcome = repair_suggestions("demo", result, settings=settings)
    assert outcome is not None and outcome.report.skipped is not None
    assert outcome.slack_text == ""
    assert "Not asked: no OpenAI-compatible endpoint configured" in outcome.markdown


def test_a_flow_alert_for_demo_v2_carries_the_suggestions_and_an_artifact(
    stub: OpenAIStub,
    demo_site: DemoSite,
    prefect_server: PrefectServer,
    tmp_path: Path,
) -> None:
    demo_site.control(layout="v2")
    try:
        urls = [f"{demo_site.url}/product/{sku}" for sku in SKUS]
        result = gate_result("live", urls, ["name", "price", "currency"])
        with SlackReceiver(run_dir=tmp_path) as receiver:
            env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
            env.update(prefect_server.client_environment())
            env.update(
                {
                    "SLACK_WEBHOOK_URL": receiver.url,
                    "OPENAI_BASE_URL": stub.base_url,
                    "OPENAI_API_KEY": SECRET,
                    "CHAT_MODEL": "stub-chat-3",
                    "PYTHONPATH": str(REPO_ROOT),
                }
            )
            done = subprocess.run(
                [sys.executable, "-m", "tests.orchestration.repair_flows"],
                cwd=REPO_ROOT,
                env=env,
                input=json.dumps(result),
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, done.stderr[-3000:]
            run_id = done.stdout.strip().splitlines()[-1]
            (post,) = receiver.posts()
    finally:
        demo_site.control(layout="v1")
    text = str(post["text"])
    assert "skipped (fail-closed)" in text
    assert "*product.name*: `css: h2.pdp__title::text`" in text
    assert "*product.currency*: `json: script#__STATE__ -> product.pricing.currencyCode`" in text
    assert "e.g. `EUR`; `EUR`" in text
    assert SECRET not in text + done.stdout + done.stderr
    artifacts = api(
        prefect_server, "/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [run_id]}}}
    )
    (artifact,) = [a for a in artifacts if a["key"] == "repair-suggestions-demo"]
    assert "| product | currency | .product-price[data-currency] |" in artifact["data"]
    assert "product.price `css: span.pdp__amount::text`: invalid value" in artifact["data"]
    # The pages were fetched again through the site's fetch stack, from the v2 shop.
    assert {e["path"] for e in demo_site.access_log()} >= {f"/product/{sku}" for sku in SKUS}
