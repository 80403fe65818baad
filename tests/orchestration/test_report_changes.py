"""The job's notable changes in the run report and the Slack summary: counted from the
change documents in a real Elasticsearch node, posted through the real slack-sdk client
to a local webhook receiver."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import AsyncElasticsearch, Elasticsearch

from core.config import PlatformSettings
from core.recrawl.history import job_change_counts
from core.store import ItemStore
from core.store.changes import change_action, ensure_changes_index
from harness.es_node import ElasticsearchNode
from harness.slack_receiver import SlackReceiver
from orchestration.alerts import Delivery, notify, render
from orchestration.report import markdown, summary_context, table_rows
from tests.core.store.support import FAST

SITE = "reportshop"
DOCUMENT: dict[str, Any] = {
    "site": SITE,
    "status": "completed",
    "job_id": "job-2",
    "items_scraped": 1200,
    "items_new": 24,
    "items_changed": 60,
    "items_unchanged": 1116,
    "items_invalid": 0,
    "items_stored": 1200,
    "items_incomplete": 0,
    "requests": 2480,
    "responses": 2480,
    "blocks": 0,
    "block_rate": 0.0,
    "errors": 0,
    "duration_seconds": 72.0,
}
# (field, old, new, kind) per item, for job-2; job-1 has one price drop of its own.
CHANGES = [
    *[("price", 20.0, 18.0, "price_drop")] * 14,
    *[("availability", "OutOfStock", "InStock", "back_in_stock")] * 3,
    ("price", 10.0, 12.0, "price_rise"),
]


@pytest.fixture
def changes(es_node: ElasticsearchNode, es: Elasticsearch) -> Iterator[None]:
    es.indices.delete(index=f"changes-{SITE}*", ignore_unavailable=True, allow_no_indices=True)
    actions = [
        change_action(
            site=SITE,
            item_type="demo_product",
            key=f"{SITE}:demo_product:DM-{n:05d}",
            job_id="job-2",
            seen_ms=1_700_000_000_000 + n,
            field=field,
            old=old,
            new=new,
            kind=kind,
        )
        for n, (field, old, new, kind) in enumerate(CHANGES)
    ]
    actions.append(
        change_action(
            site=SITE,
            item_type="demo_product",
            key=f"{SITE}:demo_product:DM-99999",
            job_id="job-1",
            seen_ms=1_600_000_000_000,
            field="price",
            old=30.0,
            new=25.0,
            kind="price_drop",
        )
    )

    async def write() -> None:
        client = AsyncElasticsearch(es_node.url)
        try:
            await ensure_changes_index(client, SITE)
            async with ItemStore(client, None, settings=FAST) as store:
                await asyncio.gather(*(store.put(action) for action in actions))
        finally:
            await client.close()

    asyncio.run(write())
    yield
    es.indices.delete(index=f"changes-{SITE}*", ignore_unavailable=True, allow_no_indices=True)


def test_the_job_counts_its_changes_per_kind(changes: None, es: Elasticsearch) -> None:
    assert job_change_counts(es, SITE, "job-2") == {
        "price_drop": 14,
        "back_in_stock": 3,
        "price_rise": 1,
    }
    assert job_change_counts(es, SITE, "job-1") == {"price_drop": 1}
    assert job_change_counts(es, SITE, "job-3") == {}
    assert job_change_counts(es, "never-crawled", "job-1") == {}  # no index: nothing changed


def test_report_and_slack_name_the_notable_changes(
    changes: None, es: Elasticsearch, tmp_path: Path
) -> None:
    counts = job_change_counts(es, SITE, "job-2")
    document = {**DOCUMENT, "items_removed": 5}
    expected = "14 price drops, 1 price rise, 3 back in stock, 5 removed"
    rows = {row["metric"]: row["value"] for row in table_rows(document, chunks=0, changes=counts)}
    assert rows["notable changes"] == expected
    assert f"| notable changes | {expected} |" in markdown(document, chunks=0, changes=counts)
    # Without the removals' figure (a document that has none) the rest is named.
    assert summary_context(DOCUMENT, chunks=0, changes=counts)["notable"] == (
        "14 price drops, 1 price rise, 3 back in stock"
    )
    context = summary_context(document, chunks=0, changes=counts)
    with SlackReceiver(run_dir=tmp_path) as receiver:
        settings = PlatformSettings(slack_webhook_url=receiver.url)
        assert notify("job_summary", settings=settings, **context) is Delivery.SENT
        (post,) = receiver.posts()
    assert f"• notable changes: {expected}\n" in str(post["text"])


def test_nothing_changed_says_so_in_the_table_and_nothing_in_slack() -> None:
    rows = {row["metric"]: row["value"] for row in table_rows(DOCUMENT, chunks=0, changes={})}
    assert rows["notable changes"] == "none"
    context = summary_context(DOCUMENT, chunks=0)
    assert context["notable"] == ""
    assert "notable" not in render("job_summary", **context)
