"""A skip is only as good as the layout it was recorded under: whole crawls of the demo
shop through the Redis frontier and every pipeline into Elasticsearch.

1. Records void under a new accepted baseline: after a crawl recorded every product's
   card and page validators, the same shop under the same baseline answers 304 (skip
   off) ; once another baseline is accepted (the producer records the job's layout,
   ``core.recrawl.layouts``), no product is asked conditionally and every card's page is fetched
   (``recrawl/cards/fetched/layout``).
2. A job whose product pages cannot be parsed stops skipping: the shop serves its product
   pages in a layout the spider cannot read (the ``unreadable`` behaviour) while its
   listing cards are unchanged; the job fetches every product page (the refresh share,
   then the pages it skipped, then every card decided after), and none counts
   ``unchanged`` without being read. Field coverage is judged on the items the job
   extracted: none.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from elasticsearch import Elasticsearch

from core.jobs.index import job_counters
from core.recrawl.layouts import BASELINE_FILE, baseline_id
from crawlers.cli.producer import produce
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from orchestration.coverage import job_coverage
from standins.demo_site.catalog import Catalog, build_catalog
from tests.crawlers.pipelines.support import reset_store, start_store_worker
from tests.crawlers.support import NO_DEATHS, REPO_ROOT, final_stats, log_excerpt, wait_all

PRODUCTS = 60


@dataclass
class Crawl:
    job_id: str
    product_pages: Counter[str]  # product page path -> requests answered with that status
    statuses: Counter[int]  # product page answers by status
    stats: dict[str, Any]  # the worker's closing stats
    counters: dict[str, int]  # the job's counters and ledger figures


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSite]:
    run_dir = tmp_path_factory.mktemp("layouts-site")
    with DemoSite(run_dir=run_dir, products=PRODUCTS, name="layouts-site") as server:
        yield server


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return build_catalog(n_products=PRODUCTS)


@pytest.fixture
def stack(
    site: DemoSite, redis_server: RedisServer, es_node: ElasticsearchNode
) -> Iterator[tuple[redis.Redis, Elasticsearch]]:
    server = redis_server.client()
    site.reset()
    with Elasticsearch(es_node.url, request_timeout=60) as es:
        reset_store(es, server)
        yield server, es
        reset_store(es, server)
    site.reset()


@pytest.fixture
def sites_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The structure gate's baselines (FINGERPRINT_SITES_DIR), the demo's copied: the
    producer reads the accepted baseline there, the report its coverage baseline."""
    directory = tmp_path / "sites"
    (directory / "demo").mkdir(parents=True)
    for name in (BASELINE_FILE, "coverage.json"):
        shutil.copy(REPO_ROOT / "fingerprints" / "sites" / "demo" / name, directory / "demo")
    monkeypatch.setenv("FINGERPRINT_SITES_DIR", str(directory))
    return directory


def accept_new_baseline(sites_dir: Path) -> str:
    """An operator accepts another baseline (as ``accept_baseline`` writes it)."""
    path = sites_dir / "demo" / BASELINE_FILE
    before = baseline_id("demo", sites_dir)
    path.write_text(path.read_text().replace('"threshold": 0.85', '"threshold": 0.8', 1))
    after = baseline_id("demo", sites_dir)
    assert after != before
    return after


def crawl(
    site: DemoSite,
    server: redis.Redis,
    redis_url: str,
    es_url: str,
    log_dir: Path,
    settings: dict[str, object] | None = None,
) -> Crawl:
    since = len(site.access_log())
    job = produce(server, "demo", base_url=site.url)
    log = log_dir / f"{job.job_id}.log"
    worker = start_store_worker(
        job_id=job.job_id,
        base_url=site.url,
        log_path=log,
        redis_url=redis_url,
        es_url=es_url,
        settings={**NO_DEATHS, **(settings or {})},
    )
    assert wait_all([worker], timeout=300) == [0], log_excerpt(log)
    served = [e for e in site.access_log(since) if e["path"].startswith("/product/")]
    return Crawl(
        job.job_id,
        Counter(e["path"] for e in served),
        Counter(e["status"] for e in served),
        final_stats(log),
        job_counters(server, "demo", job.job_id),
    )


def test_a_new_accepted_baseline_voids_card_records_and_validators(
    site: DemoSite,
    catalog: Catalog,
    stack: tuple[redis.Redis, Elasticsearch],
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
    sites_dir: Path,
    tmp_path: Path,
) -> None:
    server, _ = stack
    pages = {p.url for p in catalog.products}
    layout = baseline_id("demo", sites_dir)

    def run(card_skip: bool) -> Crawl:
        settings = {"RECRAWL_CARD_SKIP": card_skip}
        return crawl(site, server, redis_server.url, es_node.url, tmp_path, settings)

    # 1. Every product fetched in full; cards and validators recorded under the layout.
    first = run(card_skip=True)
    assert set(first.product_pages) == pages and first.statuses == {200: PRODUCTS}
    assert server.get(f"{{demo}}:job:{first.job_id}:layout") == layout.encode()
    assert first.counters["recrawl/cards/recorded"] == PRODUCTS

    # 2. The same baseline, validators only: every product page answers 304.
    second = run(card_skip=False)
    assert second.statuses == {304: PRODUCTS}, second.statuses

    # 3. Another baseline accepted: no record of the old one stands for a page.
    new_layout = accept_new_baseline(sites_dir)
    third = run(card_skip=False)
    assert third.statuses == {200: PRODUCTS}, third.statuses
    assert third.counters["recrawl/conditional/layout_changed"] == PRODUCTS
    assert "recrawl/conditional/sent" not in third.counters
    assert third.counters["items/unchanged"] == PRODUCTS  # read again: the same products

    # 4. The cards, recorded under the old baseline, are void too: every page fetched.
    fourth = run(card_skip=True)
    assert set(fourth.product_pages) == pages and fourth.statuses == {200: PRODUCTS}
    assert fourth.counters["recrawl/cards/fetched/layout"] == PRODUCTS
    assert "recrawl/cards/skipped" not in fourth.counters
    assert server.get(f"{{demo}}:job:{fourth.job_id}:layout") == new_layout.encode()

    # 5. Recorded again under the new baseline: skipped again, but for the refresh share.
    fifth = run(card_skip=True)
    assert fifth.counters["recrawl/cards/skipped"] == PRODUCTS - len(fifth.product_pages)
    assert len(fifth.product_pages) < PRODUCTS / 3


def test_a_job_whose_product_pages_cannot_be_parsed_stops_skipping(
    site: DemoSite,
    catalog: Catalog,
    stack: tuple[redis.Redis, Elasticsearch],
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
    sites_dir: Path,
    tmp_path: Path,
) -> None:
    server, es = stack
    pages = {p.url for p in catalog.products}
    first = crawl(site, server, redis_server.url, es_node.url, tmp_path)
    assert set(first.product_pages) == pages
    extracted = job_coverage(es, "demo", first.job_id, sites_dir=sites_dir)
    assert extracted.items == PRODUCTS

    # The cards unchanged, the product pages in a layout the spider cannot read.
    site.control(unreadable={"paths": ["/product/"]})
    second = crawl(site, server, redis_server.url, es_node.url, tmp_path)
    # Every product page fetched, once: the refresh share, the pages skipped before the
    # first unparsed one, every card decided after it.
    assert set(second.product_pages) == pages, sorted(pages - set(second.product_pages))
    assert set(second.product_pages.values()) == {1}
    counters = second.counters
    assert counters["demo/product_unparsed"] == PRODUCTS
    assert counters["recrawl/unparsed/stopped"] == 1
    fetched = sum(v for k, v in counters.items() if k.startswith("recrawl/cards/fetched/"))
    assert fetched + counters.get("recrawl/unparsed/refetched", 0) == PRODUCTS
    # Nothing counted unchanged but the cards skipped before the first unparsed page
    # (read in this job, under its layout), and each of those pages was fetched after all.
    assert counters.get("items/unchanged", 0) == counters.get("recrawl/cards/skipped", 0)
    assert counters.get("recrawl/unparsed/refetched", 0) == counters.get("recrawl/cards/skipped", 0)
    # Coverage is judged on what the job extracted (nothing), not on the documents its
    # skipped cards touched: not judged, too few items.
    coverage = job_coverage(es, "demo", second.job_id, sites_dir=sites_dir)
    assert coverage.items == 0 and not coverage.ok
    assert any("0 item(s)" in problem for problem in coverage.problems), coverage.problems
