"""Whole crawls whose store cannot do its job, against a real Elasticsearch node: the store
always closes and the crawl says so.

* Elasticsearch refusing writes (the index write-blocked) and a spill that cannot be
  written: the items are given up at ``STORE_CLOSE_TIMEOUT`` with one ERROR line naming the
  spill and the number of items, the crawl closes ``store_failed`` (exit 5), by itself or
  on SIGTERM; a second SIGTERM stops it at once (``shutdown_forced``, exit 6).
* An index whose mapping conflicts with the schema: one ERROR line with the fix, never
  retried, ``store_failed``.
* ``STORE_SPILL_DIR`` from the environment is where the spill goes; nothing stored but
  everything spilled is ``nothing_stored`` (exit 4), its line naming the spill.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from pathlib import Path

import pytest
from elasticsearch import AsyncElasticsearch, Elasticsearch

from core.jobs.index import JOBS_ALIAS
from core.store import IndexLayout, ensure_item_index
from crawlers.items import schema_by_type
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from tests.crawlers.pipelines.support import module_site, start_store_worker
from tests.crawlers.support import final_stats, log_excerpt, wait_all, wait_for

# Long end-to-end cases (whole crawls with a fault injected): `make test-e2e`.
pytestmark = pytest.mark.e2e

PRODUCTS = 30
INDEX = IndexLayout.index("demo", "demo_product")

site = module_site("store-failures-site", PRODUCTS)


def write_blocked(es_node: ElasticsearchNode) -> None:
    """The demo's item index declared as the store declares it, then refusing writes."""

    async def declare() -> None:
        async with AsyncElasticsearch(es_node.url, request_timeout=30) as aes:
            properties = schema_by_type("demo_product").es_properties
            await ensure_item_index(aes, "demo", "demo_product", properties, replicas=0)

    asyncio.run(declare())
    Elasticsearch(es_node.url).indices.put_settings(
        index=INDEX, settings={"index.blocks.write": True}
    )


def unblock(es: Elasticsearch) -> None:
    es.options(ignore_status=404).indices.put_settings(
        index=INDEX, settings={"index.blocks.write": False}
    )


def lines(log: Path, marker: str) -> list[str]:
    if not log.exists():
        return []
    return [line for line in log.read_text().splitlines() if marker in line]


def last_line(log: Path) -> str:
    return log.read_text().splitlines()[-1].split(" [crawlers.commands.crawl] ", 1)[1]


def broken_spill(tmp_path: Path) -> Path:
    """A spill directory that exists and is writable, whose spill file cannot be written
    (a directory in its place: refused even to root)."""
    directory = tmp_path / "spill"
    (directory / "demo.jsonl").mkdir(parents=True)
    return directory


FAST_STORE: dict[str, object] = {"STORE_SPILL_AFTER": 0.5, "STORE_RETRY_BACKOFF_MAX": 1.0}


def test_refused_writes_and_an_unwritable_spill_close_store_failed_at_the_timeout(
    site: DemoSite,
    clean_es: Elasticsearch,
    es_node: ElasticsearchNode,
    tmp_path: Path,
) -> None:
    write_blocked(es_node)
    spill = broken_spill(tmp_path)
    log = tmp_path / "worker.log"
    try:
        started = time.monotonic()
        worker = start_store_worker(
            job_id="store-failed", base_url=site.url, log_path=log, redis_url=None,
            es_url=es_node.url,
            settings={**FAST_STORE, "STORE_SPILL_DIR": spill, "STORE_CLOSE_TIMEOUT": 3},
        )  # fmt: skip
        assert wait_all([worker], timeout=120) == [5], log_excerpt(log)
        took = time.monotonic() - started
    finally:
        unblock(clean_es)
    (error,) = lines(log, "[core.store.writer] ERROR")
    stats = final_stats(log)
    given_up = stats["store/unsaved"]
    assert f"store gave up on {given_up} items after STORE_CLOSE_TIMEOUT=3s" in error
    assert f"the spill (file {spill / 'demo.jsonl'}) cannot be written" in error
    assert "cluster_block_exception" in error
    # Items are not tracebacks each: the store's one line says it for all of them.
    assert lines(log, "] ERROR: ") == [error, lines(log, "finish_reason store_failed")[-1]]
    assert "Traceback" not in log.read_text()
    assert last_line(log).startswith(
        f"ERROR: finish_reason store_failed: 0 of {PRODUCTS} items stored: {PRODUCTS} neither "
        "stored nor spilled: store gave up on"
    )
    assert took < 90  # it never hangs: the whole crawl, start-up included
    clean_es.indices.refresh(index=JOBS_ALIAS)
    job = clean_es.get(index=JOBS_ALIAS, id="demo:store-failed")["_source"]
    assert (job["close_reason"], job["status"]) == ("store_failed", "failed")
    assert job["outcome"] == last_line(log).split("finish_reason store_failed: ", 1)[1]


def test_sigterm_is_honoured_while_the_store_can_neither_write_nor_spill(
    site: DemoSite,
    clean_es: Elasticsearch,
    es_node: ElasticsearchNode,
    tmp_path: Path,
) -> None:
    write_blocked(es_node)
    spill = broken_spill(tmp_path)
    # Product pages are slow: the crawl would go on for minutes.
    site.reset()  # an empty access log
    site.control(slow={"rate": 1.0, "ms": 2000, "paths": ["/product/"]})
    settings = {
        **FAST_STORE, "STORE_SPILL_DIR": spill, "STORE_CLOSE_TIMEOUT": 20,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 2, "AUTOTHROTTLE_ENABLED": False,
    }  # fmt: skip
    runs: list[tuple[subprocess.Popen[bytes], Path]] = []
    try:
        for name in ("graceful", "forced"):
            log = tmp_path / f"{name}.log"
            worker = start_store_worker(
                job_id=name, base_url=site.url, log_path=log, redis_url=None,
                es_url=es_node.url, settings=settings,
            )  # fmt: skip
            runs.append((worker, log))
        # Both crawls have items waiting in memory: product pages and their reviews served.
        wait_for(
            lambda: sum("/reviews" in hit["path"] for hit in site.access_log()) >= 8,
            timeout=90,
            what="items of both crawls",
        )
        time.sleep(1)
        (graceful, graceful_log), (forced, forced_log) = runs
        graceful.send_signal(signal.SIGTERM)
        forced.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        time.sleep(1)
        forced.send_signal(signal.SIGTERM)  # Scrapy's own: a second one forces the stop
        assert wait_all([forced], timeout=30) == [6], log_excerpt(forced_log)
        assert wait_all([graceful], timeout=90) == [5], log_excerpt(graceful_log)
        took = time.monotonic() - sent
    finally:
        site.reset()
        unblock(clean_es)
    # The SIGTERM closed it (not the store's give-up), within STORE_CLOSE_TIMEOUT of its
    # items (and a slow page's wait), rather than never.
    assert lines(graceful_log, "Received SIGTERM") and lines(
        graceful_log, "Closing spider (shutdown)"
    )
    assert took < 20 + 40  # STORE_CLOSE_TIMEOUT, and a loaded machine's margin
    assert last_line(graceful_log).startswith("ERROR: finish_reason store_failed: ")
    assert len(lines(graceful_log, "[core.store.writer] ERROR")) == 1
    assert last_line(forced_log).startswith("ERROR: finish_reason shutdown_forced: ")
    assert last_line(forced_log).endswith(
        "stopped before it closed (SIGTERM/SIGINT twice): items in flight were not stored"
    )


def test_a_conflicting_mapping_is_one_error_with_the_fix_and_store_failed(
    site: DemoSite,
    clean_es: Elasticsearch,
    es_node: ElasticsearchNode,
    tmp_path: Path,
) -> None:
    # An index of an older schema: price a keyword where the schema has a double.
    clean_es.indices.create(index=INDEX, mappings={"properties": {"price": {"type": "keyword"}}})
    log = tmp_path / "worker.log"
    worker = start_store_worker(
        job_id="conflict", base_url=site.url, log_path=log, redis_url=None, es_url=es_node.url,
        settings={"STORE_SPILL_DIR": tmp_path / "spill"},
    )  # fmt: skip
    assert wait_all([worker], timeout=120) == [5], log_excerpt(log)
    (error,) = lines(log, "[core.store.writer] ERROR")
    assert (
        f"index {INDEX} has a conflicting mapping for field price (keyword there, double in "
        "the demo_product schema)"
    ) in error
    assert f"DELETE /{INDEX}" in error and "not retried" in error
    stats = final_stats(log)
    assert stats["store/dead_letter"] == stats["item_dropped_count"] == PRODUCTS
    assert stats["store/errors/illegal_argument_exception"] == 1  # declared once
    assert "store/retried" not in stats and "store/spilled" not in stats
    assert len(lines(log, "Dropped: Elasticsearch rejected")) == 1  # the rest at DEBUG
    assert last_line(log).startswith(
        f"ERROR: finish_reason store_failed: 0 of {PRODUCTS} items stored: {PRODUCTS} rejected "
        "by Elasticsearch for good (dead letters): 400 illegal_argument_exception: index "
    )


def test_the_spill_directory_comes_from_the_environment(
    site: DemoSite,
    clean_es: Elasticsearch,
    es_node: ElasticsearchNode,
    tmp_path: Path,
) -> None:
    write_blocked(es_node)
    spill, run_dir = tmp_path / "env-spill", tmp_path / "run"
    log = tmp_path / "worker.log"
    try:
        worker = start_store_worker(
            job_id="env-spill", base_url=site.url, log_path=log, redis_url=None,
            es_url=es_node.url, settings={**FAST_STORE, "PLATFORM_RUN_DIR": run_dir},
            env={"STORE_SPILL_DIR": str(spill)},
        )  # fmt: skip
        assert wait_all([worker], timeout=120) == [4], log_excerpt(log)
    finally:
        unblock(clean_es)
    spilled = (spill / "demo.jsonl").read_text().splitlines()
    assert len(spilled) == PRODUCTS
    assert not (run_dir / "spill" / "demo.jsonl").exists()
    assert last_line(log) == (
        f"ERROR: finish_reason nothing_stored: 0 of {PRODUCTS} items stored: {PRODUCTS} wait "
        "in the spill for Elasticsearch"
    )
