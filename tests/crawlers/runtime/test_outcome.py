"""A crawl's final word (``crawlers.runtime.outcome``, ``scrapy crawl``): real crawls on
loopback, each ending with the close reason that says what it got, in Scrapy's
``finish_reason``, in Scrapy's own closing lines, in the log's last line and in the exit
status. Zero items stored is never success."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import redis
from elasticsearch import Elasticsearch

from core.jobs.index import job_counters, write_job_document
from crawlers.cli.producer import produce
from harness.base import free_port
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from tests.crawlers.fetch.support import CrawlResult, run_crawl
from tests.crawlers.pipelines.support import module_site, reset_store, start_store_worker
from tests.crawlers.support import REPO_ROOT, crawl_env, log_excerpt, wait_all

PRODUCTS = 30
VALIDATION_ONLY = '{"crawlers.pipelines.validate.ValidationPipeline": 100}'
TEST_SPIDERS = {
    "SPIDER_MODULES": "tests.crawlers.runtime.spiders",
    "ITEM_PIPELINES": VALIDATION_ONLY,
}

UNUSED = "http://127.0.0.1:9"  # the test spiders read data: URLs

site = module_site("outcome-site", PRODUCTS)


def last_line(result: CrawlResult) -> str:
    """The log's last line, without its time stamp and logger."""
    line = result.log.splitlines()[-1]
    assert "[crawlers.commands.crawl]" in line, result.log[-3000:]
    return line.split(": ", 1)[1]


def closed_as(result: CrawlResult, reason: str, code: int) -> None:
    """Every place says ``reason``: the exit status, the stats, Scrapy's closing lines."""
    assert result.returncode == code, result.log[-3000:]
    assert result.stat("finish_reason") == reason
    assert result.stat(f"workers/finish_reason/{reason}") == 1
    assert f"Closing spider ({reason})" in result.log
    assert f"Spider closed ({reason})" in result.log
    assert last_line(result) == f"finish_reason {reason}: {result.stat('outcome')}"


def test_a_healthy_crawl_finished_and_exits_0(site: DemoSite, tmp_path: Path) -> None:
    result = run_crawl(tmp_path, base_url=site.url)
    closed_as(result, "finished", 0)
    assert len(result.items) == PRODUCTS
    assert result.stat("outcome") == (
        f"{PRODUCTS} items stored; no store (ELASTICSEARCH_URL): the items went to the feed "
        "exports only"
    )


def test_a_site_that_is_down_is_nothing_stored_with_why(tmp_path: Path) -> None:
    down = f"http://127.0.0.1:{free_port()}"  # nothing listens
    result = run_crawl(tmp_path, base_url=down, settings={"RETRY_TIMES": 1})
    closed_as(result, "nothing_stored", 4)
    assert result.stat("outcome") == (
        "0 items: site down (connection refused on every request, 4 requests)"
    )


def test_selectors_matching_nothing_are_nothing_stored(site: DemoSite, tmp_path: Path) -> None:
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    # The home page is read, but its follow rule matches no link of the shop.
    (profiles / "blind.toml").write_text(
        'item_type = "product"\nbase_url = "http://127.0.0.1:8123"\nstart_page = "home"\n'
        '[pages.home]\nfollow = [{css = "a.no-such-link", to = "product-page"}]\n'
        "[pages.product-page]\nurl_patterns = ['^/product/']\nitem = \"Product\"\n"
        "[pages.product-page.fields]\nproduct_id = [{url = '/product/([^/?#]+)'}]\n"
        'name = [{css = "h1"}]\n'
    )
    log = tmp_path / "blind.log"
    argv = [
        sys.executable, "-m", "scrapy", "crawl", "blind", "-a", f"base_url={site.url}",
        "-s", f"LOG_FILE={log}",
    ]  # fmt: skip
    env = {**crawl_env(), "SITE_PROFILES_DIR": str(profiles)}
    done = subprocess.run(argv, cwd=REPO_ROOT, env=env, timeout=180)
    text = log.read_text()
    assert done.returncode == 4, text[-3000:]
    assert text.splitlines()[-1].endswith(
        "ERROR: finish_reason nothing_stored: 0 items: 1 page read, no item extracted "
        "(selectors matched nothing?)"
    )


def test_every_item_dropped_is_nothing_stored_naming_the_field(tmp_path: Path) -> None:
    result = run_crawl(tmp_path, base_url=UNUSED, spider="nameless", settings=TEST_SPIDERS)
    closed_as(result, "nothing_stored", 4)
    assert (
        result.stat("outcome") == "0 of 20 items stored: all dropped by validation (name missing)"
    )
    assert result.stat("item_dropped_count") == 20


def test_a_site_that_lists_no_items_finished(tmp_path: Path) -> None:
    result = run_crawl(tmp_path, base_url=UNUSED, spider="empty_listing", settings=TEST_SPIDERS)
    assert result.returncode == 0, result.log[-3000:]
    assert result.stat("finish_reason") == "finished"
    assert last_line(result) == (
        "finish_reason finished: 0 items: the site lists none (1 page read, 1 of them listing "
        "no items)"
    )


def test_a_crawl_refused_before_the_early_close_is_refused_too(
    site: DemoSite, tmp_path: Path
) -> None:
    site.control(forbidden={"rate": 1.0, "attempts": None})
    try:
        # Never closed early (REFUSAL_CLOSE_AFTER=0): Scrapy closes it "finished".
        result = run_crawl(
            tmp_path,
            base_url=site.url,
            settings={"REFUSAL_CLOSE_AFTER": 0, "RETRY_BACKOFF_BASE": 0.01},
        )
    finally:
        site.reset()
    closed_as(result, "refused", 3)
    assert result.stat("outcome") == result.stat("refusal")
    assert last_line(result) == f"finish_reason refused: {result.stat('refusal')}"


@pytest.mark.parametrize("where", ["exists, unwritable", "cannot be created"])
def test_an_unwritable_spill_directory_from_the_environment_is_one_line(
    where: str, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    # /sys exists and refuses new files even to root; nothing can be made under a file.
    spill = Path("/sys") if where == "exists, unwritable" else blocker / "spill"
    env = {**crawl_env(), "STORE_SPILL_DIR": str(spill)}
    argv = [
        sys.executable, "-m", "scrapy", "crawl", "demo",
        "-a", f"base_url=http://127.0.0.1:{free_port()}",
        "-s", f"ELASTICSEARCH_URL=http://127.0.0.1:{free_port()}",
    ]  # fmt: skip
    done = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr[-3000:]
    [line] = done.stderr.splitlines()
    assert line.startswith(
        f"configuration error: the store's spill directory {spill} (STORE_SPILL_DIR) cannot be "
        "written ("
    )
    assert line.endswith("make it writable or set STORE_SPILL_DIR to a writable directory")


def test_a_worker_that_stored_nothing_while_its_peer_stored_everything_finished(
    site: DemoSite,
    redis_server: RedisServer,
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    tmp_path: Path,
) -> None:
    server = redis.Redis.from_url(redis_server.url)
    reset_store(es, server)
    job = produce(server, "demo", base_url=site.url)
    logs = [tmp_path / "first.log", tmp_path / "late.log"]
    # The first worker crawls the whole job; the second starts on its drained frontier.
    for log in logs:
        worker = start_store_worker(
            job_id=job.job_id, base_url=site.url, log_path=log, redis_url=redis_server.url,
            es_url=es_node.url,
        )  # fmt: skip
        assert wait_all([worker], timeout=180) == [0], log_excerpt(log)
    first, late = (log.read_text().splitlines()[-1] for log in logs)
    assert first.endswith(f"INFO: finish_reason finished: {PRODUCTS} items stored")
    assert late.endswith(
        f"INFO: finish_reason finished: {PRODUCTS} items stored (by the job's workers; this "
        "one stored 0)"
    )
    # The job's counters say how its workers ended; its document says how the job did.
    counters = job_counters(server, "demo", job.job_id)
    assert counters["workers/finish_reason/finished"] == 2
    document = write_job_document(es, "demo", job.job_id, "completed", None, None, counters)
    assert (document["close_reason"], document["outcome"]) == (
        "finished",
        f"{PRODUCTS} items stored",
    )
    reset_store(es, server)


def test_a_worker_closed_idle_after_the_job_s_page_budget_says_budget_pages(
    site: DemoSite,
    redis_server: RedisServer,
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    tmp_path: Path,
) -> None:
    server = redis.Redis.from_url(redis_server.url)
    reset_store(es, server)
    job = produce(server, "demo", base_url=site.url)
    log = tmp_path / "worker.log"
    # Room for the listings and some products: the budget empties the job's frontier and
    # the worker closes on its idleness; the job ended at its budget, not by running out.
    worker = start_store_worker(
        job_id=job.job_id, base_url=site.url, log_path=log, redis_url=redis_server.url,
        es_url=es_node.url, settings={"CRAWL_MAX_PAGES": PRODUCTS // 2 + 10},
    )  # fmt: skip
    assert wait_all([worker], timeout=180) == [0], log_excerpt(log)
    stored = es.count(index="items-demo*")["count"]
    # Usually fewer than all: on a loaded machine the requests already in flight when the
    # budget is reached may still bring every product; the reason is the budget's either way.
    assert 0 < stored <= PRODUCTS
    lines = log.read_text().splitlines()
    assert "Closing spider (finished)" in log.read_text()  # Scrapy's, from the idle close
    assert lines[-1].endswith(f"INFO: finish_reason budget_pages: {stored} items stored")
    counters = job_counters(server, "demo", job.job_id)
    assert counters["workers/finish_reason/budget_pages"] == 1
    reset_store(es, server)
