"""``scrapy crawl`` without the frontier: no services at all, and Elasticsearch only.

Also a real crawl that yields invalid items: they are dropped with reasons counted; and
Elasticsearch down at close: the items spill to a file, and the command the close line
names drains it.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from core.jobs.index import JOBS_ALIAS
from core.store import epoch_ms
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from standins.demo_site.catalog import build_catalog
from tests.crawlers.pipelines.support import (
    count_docs,
    key_of,
    module_site,
    start_store_worker,
    stored_docs,
)
from tests.crawlers.support import (
    REPO_ROOT,
    crawl_env,
    final_stats,
    log_excerpt,
    wait_all,
    wait_for,
)

# Long end-to-end cases (whole crawls in subprocesses, most with a fault injected
# mid-crawl): `make test-e2e`.
pytestmark = pytest.mark.e2e

PRODUCTS = 240


site = module_site("local-site", PRODUCTS)


def test_crawl_without_any_service_still_writes_the_feed(site: DemoSite, tmp_path: Path) -> None:
    output, log = tmp_path / "items.jsonl", tmp_path / "worker.log"
    worker = start_store_worker(
        job_id="local-1",
        base_url=site.url,
        log_path=log,
        redis_url=None,
        es_url=None,
        output=output,
    )
    assert wait_all([worker], timeout=120) == [0], log_excerpt(log)
    items = [json.loads(line) for line in output.read_text().splitlines()]
    assert len(items) == PRODUCTS
    text = log.read_text()
    assert "Enabled item pipelines:\n['crawlers.pipelines.validate.ValidationPipeline']" in text
    assert final_stats(log)["validation/valid/demo_product"] == PRODUCTS


def test_crawl_with_elasticsearch_only_stores_and_writes_its_job_document(
    site: DemoSite,
    clean_es: Elasticsearch,
    es_node: ElasticsearchNode,
    tmp_path: Path,
) -> None:
    es = clean_es
    settings = {"STORE_SPILL_DIR": tmp_path / "spill"}
    runs = []
    for job_id in ("local-a", "local-b"):
        log = tmp_path / f"{job_id}.log"
        worker = start_store_worker(
            job_id=job_id,
            base_url=site.url,
            log_path=log,
            redis_url=None,
            es_url=es_node.url,
            settings=settings,
        )
        assert wait_all([worker], timeout=120) == [0], log_excerpt(log)
        runs.append({doc["_id"]: doc for doc in stored_docs(es)})
    assert count_docs(es) == PRODUCTS
    first, second = runs
    for key, doc in second.items():
        # Without Redis the timestamps come from the stored documents: same result.
        assert doc["first_seen"] == first[key]["first_seen"] == first[key]["last_changed"]
        assert doc["last_changed"] == first[key]["last_changed"]
        assert epoch_ms(doc["last_seen"]) > epoch_ms(first[key]["last_seen"])
        assert doc["job_id"] == "local-b"

    es.indices.refresh(index=JOBS_ALIAS)
    jobs = {hit["_id"]: hit["_source"] for hit in es.search(index=JOBS_ALIAS)["hits"]["hits"]}
    assert set(jobs) == {"demo:local-a", "demo:local-b"}
    a, b = jobs["demo:local-a"], jobs["demo:local-b"]
    assert a["status"] == b["status"] == "completed"
    assert (a["items_new"], a["items_unchanged"]) == (PRODUCTS, 0)
    assert (b["items_new"], b["items_changed"], b["items_unchanged"]) == (0, 0, PRODUCTS)
    assert b["items_stored"] == PRODUCTS and b["extra"]["mode"] == "local"
    assert not list((tmp_path / "spill").glob("*.jsonl")) or all(
        not path.read_text() for path in (tmp_path / "spill").glob("*.jsonl")
    )

    # Revision 1 (5% of products changed, 2% added): dedup reads the stored documents
    # and reports exactly those, with the same timestamps rules as with Redis.
    revised = build_catalog(n_products=PRODUCTS).revised(1)
    changed = {key_of(sku) for sku in revised.changed_skus}
    added = {key_of(sku) for sku in revised.added_skus}
    assert (len(changed), len(added)) == (12, 5)
    site.control(revision=1)
    try:
        log = tmp_path / "local-c.log"
        worker = start_store_worker(
            job_id="local-c",
            base_url=site.url,
            log_path=log,
            redis_url=None,
            es_url=es_node.url,
            settings=settings,
        )
        assert wait_all([worker], timeout=120) == [0], log_excerpt(log)
    finally:
        site.control(revision=0)
    third = {doc["_id"]: doc for doc in stored_docs(es)}
    assert set(third) == set(second) | added
    for key, doc in third.items():
        assert doc["job_id"] == "local-c"
        if key in added:
            assert doc["first_seen"] == doc["last_changed"] == doc["last_seen"]
            continue
        assert doc["first_seen"] == second[key]["first_seen"]
        if key in changed:
            assert doc["last_changed"] == doc["last_seen"] != second[key]["last_changed"]
        else:
            assert doc["last_changed"] == second[key]["last_changed"]
    es.indices.refresh(index=JOBS_ALIAS)
    c = es.get(index=JOBS_ALIAS, id="demo:local-c")["_source"]
    assert (c["items_new"], c["items_changed"], c["items_unchanged"]) == (5, 12, PRODUCTS - 12)


def test_invalid_items_are_dropped_with_reasons_counted(tmp_path: Path) -> None:
    output, log = tmp_path / "items.jsonl", tmp_path / "bad.log"
    env = crawl_env()
    argv = [
        sys.executable, "-m", "scrapy", "crawl", "bad_items", "-O", str(output),
        "-s", "SPIDER_MODULES=tests.crawlers.pipelines.spiders",
        "-s", f"LOG_FILE={log}",
    ]  # fmt: skip
    assert subprocess.run(argv, cwd=REPO_ROOT, env=env, timeout=120).returncode == 0
    kept = [json.loads(line) for line in output.read_text().splitlines()]
    assert sorted(item["sku"] for item in kept) == ["OK-1", "OK-2", "OK-3"]
    assert next(item for item in kept if item["sku"] == "OK-2")["price"] == 10.0
    stats = final_stats(log)
    assert stats["validation/valid/demo_product"] == 3
    assert stats["validation/dropped/demo_product"] == 4
    assert stats["validation/dropped/_unknown/dict"] == 1
    assert stats["item_dropped_count"] == 5
    reasons = {name: n for name, n in stats.items() if name.startswith("validation/invalid/")}
    assert reasons == {
        "validation/invalid/demo_product/name/missing": 2,
        "validation/invalid/demo_product/price/float_type": 1,
        "validation/invalid/demo_product/currency/string_pattern_mismatch": 1,
        "validation/invalid/demo_product/reviews.rating/less_than_equal": 1,
    }
    text = log.read_text()
    # Each drop is logged with its reasons: nothing disappears silently.
    assert "invalid demo_product BAD-2: price: float_type" in text
    assert text.count("Dropped:") == 5


def test_elasticsearch_down_at_close_the_logged_command_drains_the_spill_file(
    site: DemoSite, tmp_path: Path
) -> None:
    # A node of its own, killed mid-crawl and started again on its port and data.
    data_dir = tmp_path / "es-home"
    node = ElasticsearchNode(run_dir=tmp_path, data_dir=data_dir).start()
    port = node.port
    es = Elasticsearch(node.url, request_timeout=30, max_retries=0)
    spill_file = tmp_path / "run" / "spill" / "demo.jsonl"
    log = tmp_path / "local-spill.log"
    worker: subprocess.Popen[bytes] | None = None
    try:
        # Items trickle in (slow reviews API) and wait 10 s in the store's buffer: the node
        # is killed once items were classified, long before the first flush, so it
        # stops with a buffer of items dedup classified, which spill. (Killed after a first
        # flush, it could find the buffer just emptied and every later item failing at
        # dedup: nothing to spill.)
        site.control(slow={"rate": 1.0, "ms": 500, "paths": ["/api/products/"]})
        worker = start_store_worker(
            job_id="local-spill",
            base_url=site.url,
            log_path=log,
            redis_url=None,
            es_url=node.url,
            settings={
                "PLATFORM_RUN_DIR": tmp_path / "run",
                "STORE_FLUSH_INTERVAL": 10.0,
                "STORE_BULK_SIZE": 1000,
                "STORE_SPILL_AFTER": 1.0,
                "STORE_CLOSE_TIMEOUT": 5.0,
                "DEDUP_RETRY_TIMES": 0,  # items classified after the stop fail at once
            },
        )
        # Local mode's dedup classifies items by batches of stored-document reads (mget),
        # one batch in flight at a time: when the node has a third, the first two batches'
        # items were answered and are in the buffer, whatever the machine's load.
        wait_for(lambda: mget_requests(es) >= 3, timeout=90, what="three dedup batches")
        # Killed, not stopped: a node shutting down gracefully may still take the next
        # bulk, which leaves nothing to spill (seen once on a loaded CI machine).
        node.kill()
        codes = wait_all([worker], timeout=180)
    except BaseException:
        if worker is not None:
            worker.kill()  # a failed test leaves no worker nor node running
        es.close()
        node.stop()
        raise
    finally:
        site.reset()
    try:
        assert spill_file.exists(), log_excerpt(log)
        spilled = [json.loads(line) for line in spill_file.read_text().splitlines()]
        stats = final_stats(log)
        # Stored nothing itself (its items wait in the spill): nothing_stored, exit 4.
        assert codes == [0 if stats.get("items/stored") else 4], log_excerpt(log)
        if not stats.get("items/stored"):
            scraped = stats["validation/valid/demo_product"]
            # Items classified after the node's kill fail at dedup: said too.
            assert (
                f"finish_reason nothing_stored: 0 of {scraped} items stored: {len(spilled)} "
                "wait in the spill for Elasticsearch"
            ) in log.read_text().splitlines()[-1]
        assert len(spilled) == stats["store/spilled"] == stats["store/spill_remaining_at_close"]
        assert spilled, log_excerpt(log)
        # The close line names the exact command: it works from a shell with no settings.
        (command,) = re.findall(r"`(python -m crawlers\.cli\.spill drain [^`]+)`", log.read_text())
        argv = [sys.executable, *shlex.split(command)[1:]]
        assert argv[-2:] == ["--spill-file", str(spill_file)]

        def drain() -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                argv, cwd=REPO_ROOT, env=crawl_env(), capture_output=True, text=True, timeout=120
            )

        down = drain()  # the node is still down: one line, nothing touched
        assert down.returncode == 1, down.stderr
        assert down.stdout.splitlines() == [
            f"demo: Elasticsearch unreachable at http://127.0.0.1:{port}: nothing drained, "
            f"{len(spilled)} in file {spill_file} left"
        ]
        assert "Traceback" not in down.stderr
        assert len(spill_file.read_text().splitlines()) == len(spilled)

        node = ElasticsearchNode(run_dir=tmp_path, port=port, data_dir=data_dir).start()
        up = drain()
        assert up.returncode == 0, up.stdout + up.stderr
        assert up.stdout.splitlines() == [
            f"demo: file {spill_file}: drained {len(spilled)}, 0 left; 0 dead letters "
            f"({spill_file.with_name('demo.dead.jsonl')})"
        ]
        assert not spill_file.exists()
        docs = stored_docs(es)
        ids = [doc["_id"] for doc in docs]
        # A bulk the node applied just before its kill, its reply lost, was spilled too (the
        # drain writes the same ids again): the worker may have indexed none itself.
        assert len(ids) == len(set(ids)) == stats.get("store/indexed", 0) + len(spilled)
        assert {entry["key"] for entry in spilled} <= set(ids)
        assert len(ids) == stats["dedup/verdict/new"]  # every classified item, once
        assert {doc["job_id"] for doc in docs} == {"local-spill"}
    finally:
        es.close()
        node.stop()


def mget_requests(es: Elasticsearch) -> int:
    """``_mget`` requests the node has received (its HTTP route statistics)."""
    stats = es.nodes.stats(metric="http")
    routes = [node["http"].get("routes", {}) for node in stats["nodes"].values()]
    return sum(r.get("/_mget", {}).get("requests", {}).get("count", 0) for r in routes)
