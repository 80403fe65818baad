"""The jobs index: document contents (block rate, verdict counts) and writes to a real node."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
from elasticsearch import Elasticsearch

from core.jobs.index import (
    JOBS_ALIAS,
    JOBS_INDEX,
    block_count,
    job_document,
    job_started_at,
    write_job_document,
)
from core.keys import SiteKeys
from harness.redis_server import RedisServer

COUNTERS = {
    "downloader/request_count": 520,
    "downloader/response_count": 500,
    "item_scraped_count": 230,
    "item_dropped_count": 12,
    "validation/dropped/demo_product": 10,
    "validation/dropped/review": 2,
    "items/new": 7,
    "items/changed": 12,
    "items/unchanged": 211,
    "store/indexed": 230,
    "log_count/ERROR": 3,
}


def test_block_rate_from_block_counters_or_none() -> None:
    with_total = {**COUNTERS, "blocks/total": 25, "blocks/captcha": 20, "blocks/throttled": 5}
    assert block_count(with_total) == 25
    by_kind = {
        **COUNTERS,
        "blocks/captcha": 20,
        "blocks/blocked": 5,
        "blocks/reason/datadome": 20,
        "blocks/rate": 0.05,  # a gauge, not a counter
    }
    assert block_count(by_kind) == 25  # one level only: breakdowns are not counted twice
    assert block_count(COUNTERS) == 0

    doc = job_document("demo", "j1", "succeeded", 0, 90.5, by_kind)
    assert doc["block_rate"] == pytest.approx(25 / 500)
    assert doc["blocks"] == 25
    assert job_document("demo", "j1", "failed", 0, 1, {})["block_rate"] is None


def test_document_lifts_headline_numbers_and_keeps_every_counter() -> None:
    started = dt.datetime(2026, 3, 1, 3, 0, tzinfo=dt.UTC)
    doc = job_document("demo", "j1", "succeeded", started, "2026-03-01T03:02:30Z", COUNTERS)
    assert doc["duration_seconds"] == 150.0
    assert doc["started_at"].startswith("2026-03-01T03:00:00")
    assert (doc["items_new"], doc["items_changed"], doc["items_unchanged"]) == (7, 12, 211)
    assert (doc["items_scraped"], doc["items_invalid"], doc["errors"]) == (230, 12, 3)
    assert doc["counters"]["store/indexed"] == "230"


@pytest.fixture
def clean_jobs(es: Elasticsearch) -> Iterator[None]:
    es.indices.delete(index=JOBS_INDEX, ignore_unavailable=True)
    yield
    es.indices.delete(index=JOBS_INDEX, ignore_unavailable=True)


def test_write_job_document_one_document_per_job(es: Elasticsearch, clean_jobs: None) -> None:
    write_job_document(es, "demo", "j1", "running", 0, None, COUNTERS, refresh=True)
    write_job_document(
        es, "demo", "j1", "succeeded", 0, 60, COUNTERS, spill_remaining=0, refresh=True
    )
    write_job_document(es, "demo", "j2", "failed", 100, 160, {}, refresh=True)
    hits = es.search(index=JOBS_ALIAS, sort=[{"started_at": "asc"}])["hits"]["hits"]
    assert [hit["_id"] for hit in hits] == ["demo:j1", "demo:j2"]
    assert hits[0]["_source"]["status"] == "succeeded"
    assert hits[0]["_source"]["items_new"] == 7
    # Kibana-friendly: typed fields aggregate, any counter is searchable.
    aggs = es.search(
        index=JOBS_ALIAS,
        size=0,
        aggs={"by_status": {"terms": {"field": "status"}}},
        query={"term": {"counters.log_count/ERROR": "3"}},
    )
    assert aggs["hits"]["total"]["value"] == 1
    assert es.indices.get_alias(name=JOBS_ALIAS)[JOBS_INDEX]["aliases"][JOBS_ALIAS] == {
        "is_write_index": True
    }


def test_job_started_at_comes_from_the_producer(redis_server: RedisServer) -> None:
    client = redis_server.client()
    try:
        client.zadd(SiteKeys("demo").jobs, {"j1": 1_700_000_000.5})
        assert job_started_at(client, "demo", "j1") == dt.datetime.fromtimestamp(
            1_700_000_000.5, tz=dt.UTC
        )
        assert job_started_at(client, "demo", "nope") is None
    finally:
        client.flushdb()
