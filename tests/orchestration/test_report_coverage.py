"""The job's field coverage in the run report, the Slack summary and the drop alert:
computed from the job's item documents in a real Elasticsearch node, against a coverage
baseline on disk, posted through the real slack-sdk client to a local webhook receiver."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import AsyncElasticsearch, Elasticsearch

from core.config import PlatformSettings
from core.items_schema import plain_fields, schema_by_type
from core.store import ItemStore, StoreAction, build_touch
from core.store.layout import ensure_item_index
from crawlers.items import Product
from fingerprints.baselines.coverage import (
    CoverageBaseline,
    FieldExpectation,
    save_coverage_baseline,
)
from harness.es_node import ElasticsearchNode
from harness.slack_receiver import SlackReceiver
from orchestration.alerts import Delivery, notify
from orchestration.coverage import alert_coverage_drop, job_coverage
from orchestration.report import markdown, summary_context, table_rows
from tests.core.store.support import FAST, action_for, clean_site, docs

SITE = "coverageshop"
OTHER = "coverageshop2"  # a site without coverage.json
DOCUMENT: dict[str, Any] = {
    "site": SITE,
    "status": "completed",
    "job_id": "job-2",
    "items_scraped": 40,
    "items_new": 0,
    "items_changed": 0,
    "items_unchanged": 40,
    "items_invalid": 0,
    "items_stored": 40,
    "items_incomplete": 0,
    "requests": 41,
    "responses": 41,
    "blocks": 0,
    "block_rate": 0.0,
    "errors": 0,
    "duration_seconds": 12.0,
}


def product(n: int, *, price: bool = True, brand: bool = True) -> Product:
    return Product(
        url=f"https://shop.example/p/{n}",
        product_id=f"P-{n:04d}",
        name=f"Lamp {n}",
        brand="Lumen" if brand else None,
        price=19.5 + n if price else None,
        currency="EUR",
    )


def store(
    es_url: str,
    site: str,
    jobs: dict[str, list[Product]],
    touched: dict[str, list[Product]] | None = None,
) -> None:
    """Write each job's items in full; ``touched``: items a later job only saw unchanged
    (by a 304 or its listing card), a touch of their documents."""

    async def write() -> None:
        client = AsyncElasticsearch(es_url)
        try:
            properties = schema_by_type("product").es_properties
            await ensure_item_index(client, site, "product", properties)
            async with ItemStore(client, None, settings=FAST) as writer:
                for job, items in jobs.items():
                    seen = 1_700_000_000_000 if job == "job-1" else 1_800_000_000_000
                    await asyncio.gather(
                        *(
                            writer.put(action_for(site, item, seen=seen, first=seen, job=job))
                            for item in items
                        )
                    )
                for job, items in (touched or {}).items():
                    await asyncio.gather(*(writer.put(touch(site, item, job)) for item in items))
        finally:
            await client.close()

    asyncio.run(write())


def touch(site: str, item: Product, job: str) -> StoreAction:
    fields = plain_fields(item)
    key = schema_by_type("product").key(site, fields)
    return build_touch(
        site=site, item_type="product", key=key, job_id=job, seen_ms=1_900_000_000_000
    )


@pytest.fixture
def stored(es_node: ElasticsearchNode, es: Elasticsearch, tmp_path: Path) -> Iterator[Path]:
    """job-1 filled every field; job-2 (40 items) lost price on 30 and brand on all.
    Returns the sites directory holding SITE's coverage baseline (measured on job-1)."""
    for site in (SITE, OTHER):
        clean_site(es, site)
    job_1 = [product(n) for n in range(100, 130)]
    job_2 = [product(n, price=n < 10, brand=False) for n in range(40)]
    # job-3 saw job-1's items unchanged without reading their pages, and extracted none.
    store(es_node.url, SITE, {"job-1": job_1, "job-2": job_2}, touched={"job-3": job_1})
    store(es_node.url, OTHER, {"job-7": [product(n, price=n % 2 == 0) for n in range(4)]})
    fields = {
        name: FieldExpectation(1.0)
        for name in ("url", "product_id", "name", "brand", "price", "job_id")
    }
    save_coverage_baseline(
        CoverageBaseline(SITE, {**fields, "currency": FieldExpectation(1.0, 0.2)}, items=30),
        tmp_path,
    )
    yield tmp_path
    for site in (SITE, OTHER):
        clean_site(es, site)


def test_a_drop_is_in_the_report_the_summary_and_alerted(
    stored: Path, es: Elasticsearch, tmp_path: Path
) -> None:
    report = job_coverage(es, SITE, "job-2", sites_dir=stored)
    assert report.items == 40  # job-2's items only, not job-1's
    assert report.rates["price"] == 0.25 and report.rates["brand"] == 0.0
    assert report.rates["currency"] == 1.0 and "content_hash" not in report.rates
    assert report.dropped_fields == ["brand", "price"]
    coverage = report.to_dict()
    line = (
        "2 field(s) dropped (40 items): brand: no item (vanished), baseline 100.0% "
        "(tolerance 10.0%); price: 25.0% of items, baseline 100.0% (tolerance 10.0%)"
    )
    rows = {r["metric"]: r["value"] for r in table_rows(DOCUMENT, chunks=0, coverage=coverage)}
    assert rows["field coverage"] == line
    text = markdown(DOCUMENT, chunks=0, coverage=coverage)
    assert f"| field coverage | {line} |" in text
    assert "## Field coverage" in text
    assert "| price | 25.0% | 100.0% | **dropped** |" in text
    assert "| currency | 100.0% | 100.0% |  |" in text
    assert "| images | 0.0% | - |  |" in text  # the item type's other fields, unjudged

    context = summary_context(DOCUMENT, chunks=0, coverage=coverage)
    with SlackReceiver(run_dir=tmp_path) as receiver:
        settings = PlatformSettings(slack_webhook_url=receiver.url)
        assert notify("job_summary", settings=settings, **context) is Delivery.SENT
        sent = alert_coverage_drop(coverage, job_id="job-2", run_url=None, settings=settings)
        assert sent is Delivery.SENT
        summary, alert = (str(post["text"]) for post in receiver.posts())
    assert f"• :warning: field coverage: {line}\n" in summary
    assert "*scrape-coverageshop*: field coverage dropped — job `job-2` (40 items)" in alert
    assert "• price: 25.0% of items, baseline 100.0% (tolerance 10.0%)" in alert
    assert "• brand: no item (vanished), baseline 100.0% (tolerance 10.0%)" in alert
    assert f"fingerprints/sites/{SITE}/coverage.json" in alert


def test_a_job_within_tolerance_is_ok_and_not_alerted(stored: Path, es: Elasticsearch) -> None:
    report = job_coverage(es, SITE, "job-1", sites_dir=stored)
    assert report.ok and report.items == 30
    coverage = report.to_dict()
    assert alert_coverage_drop(coverage, job_id="job-1", run_url=None) is None
    context = summary_context({**DOCUMENT, "job_id": "job-1"}, chunks=0, coverage=coverage)
    assert context["coverage"] == "ok: 7 field(s) within tolerance (30 items)"
    assert not context["coverage_dropped"]


def test_a_site_without_a_baseline_gets_its_measured_rates_and_no_alert(
    stored: Path, es: Elasticsearch
) -> None:
    report = job_coverage(es, OTHER, "job-7", sites_dir=stored)
    assert report.ok and report.expected is None and report.items == 4
    coverage = report.to_dict()
    assert alert_coverage_drop(coverage, job_id="job-7", run_url=None) is None
    line = summary_context({**DOCUMENT, "site": OTHER}, chunks=0, coverage=coverage)["coverage"]
    assert line.startswith("no baseline (coverage.json); measured on 4 items: ")
    assert "price 50%" in line and "name 100%" in line and "brand 100%" in line
    text = markdown({**DOCUMENT, "site": OTHER}, chunks=0, coverage=coverage)
    assert "| price | 50.0% | - |  |" in text


def test_only_the_items_a_job_extracted_are_judged(stored: Path, es: Elasticsearch) -> None:
    """job-3 touched 30 documents whose fields are all filled (job-1's) and read no page:
    judging those would pass the job as "coverage ok"; it extracted nothing to judge."""
    touched = [doc for doc in docs(es, SITE).values() if doc["job_id"] == "job-3"]
    assert len(touched) == 30 and {doc["extracted_job_id"] for doc in touched} == {"job-1"}
    report = job_coverage(es, SITE, "job-3", sites_dir=stored)
    assert report.items == 0 and not report.ok
    assert report.problems == ("only 0 item(s), fewer than the 20 needed to judge fill rates",)
    # job-1's items, extracted by job-1 and touched since, still count for job-1.
    assert job_coverage(es, SITE, "job-1", sites_dir=stored).items == 30


def test_a_job_that_stored_nothing_says_so(stored: Path, es: Elasticsearch) -> None:
    # No items for the job (and a site that never stored one): nothing judged, no alert.
    for site, job in ((SITE, "job-9"), ("never-crawled", "job-1")):
        coverage = job_coverage(es, site, job, sites_dir=stored).to_dict()
        assert coverage["items"] == 0
        assert alert_coverage_drop(coverage, job_id=job, run_url=None) is None
    coverage = job_coverage(es, SITE, "job-9", sites_dir=stored).to_dict()
    line = summary_context(DOCUMENT, chunks=0, coverage=coverage)["coverage"]
    assert line == "not judged: only 0 item(s), fewer than the 20 needed to judge fill rates"
    never = job_coverage(es, "never-crawled", "job-1", sites_dir=stored).to_dict()
    assert summary_context(DOCUMENT, chunks=0, coverage=never)["coverage"] == (
        "no baseline (coverage.json); the job stored no items"
    )
