"""Listing cards on real crawls: the demo shop crawled three times through the Redis
frontier and the pipelines (validate -> dedup -> store -> cards), counting product page
requests in the site's access log.

1. the first crawl fetches every product (every card new) and records each card once
   its complete product is stored;
2. a second crawl of the unchanged shop fetches exactly the products whose rolling-refresh
   slot is this run (``(slot(key) + run) % N == 0``), about 1/N of them, and no other;
3. revision 1 changes 5% of the products (price, description or both) and adds 2%: the
   products whose card changed (a new price) and the added ones are fetched, with this
   run's refresh share; a change of the description alone waits for its refresh slot.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from elasticsearch import Elasticsearch
from scrapy import Request

from core.cards import CardRecord, refresh_due
from core.items_schema import plain_fields, schema_for
from core.jobs_index import job_counters
from core.keys import SiteKeys
from crawlers.cards import Card, card_key
from crawlers.items import DemoProduct, Product, PropertyListing
from crawlers.producer import produce
from crawlers.profiles import SiteProfile
from crawlers.spiders.hermes import extract_category
from crawlers.spiders.idealista import extract_search_cards
from demo_site.catalog import Catalog, build_catalog
from services.demo_site import DemoSite
from services.es_node import ElasticsearchNode
from services.redis_server import RedisServer
from tests.crawlers.pipelines.support import key_of, reset_store, start_store_worker
from tests.crawlers.support import log_excerpt, wait_all
from tests.sites.support import real_response

PRODUCTS = 240
N = SiteProfile.load("demo").recrawl.refresh_runs


@dataclass
class Run:
    job_id: str
    run: int  # the job's run sequence number
    product_pages: Counter[str]  # SKU -> product page requests in this crawl
    counters: dict[str, int]
    recorded_runs: dict[str, int]  # item key -> run of its recorded card, after the crawl


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSite]:
    run_dir = tmp_path_factory.mktemp("cards-site")
    with DemoSite(run_dir=run_dir, products=PRODUCTS, name="cards-site") as server:
        yield server


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return build_catalog(n_products=PRODUCTS)


def crawl(site: DemoSite, server: redis.Redis, redis_url: str, es_url: str, logs: Path) -> Run:
    since = len(site.access_log())
    job = produce(server, "demo", base_url=site.url)
    paths = [logs / f"{job.job_id}-{n}.log" for n in range(2)]
    workers = [
        start_store_worker(
            job_id=job.job_id,
            base_url=site.url,
            log_path=path,
            redis_url=redis_url,
            es_url=es_url,
        )
        for path in paths
    ]
    assert wait_all(workers, timeout=300) == [0, 0], log_excerpt(paths[0])
    pages = Counter(
        entry["path"].removeprefix("/product/")
        for entry in site.access_log(since)
        if entry["path"].startswith("/product/")
    )
    run = server.hget(SiteKeys("demo").job_seq_of, job.job_id)
    assert run is not None, "the job's run is assigned by its first listing page"
    recorded = {}
    for key, value in server.hgetall(SiteKeys("demo").card_state).items():
        record = CardRecord.decode(value)
        assert record is not None
        recorded[key.decode()] = record.run
    return Run(job.job_id, int(run), pages, job_counters(server, "demo", job.job_id), recorded)


def due(skus: Iterable[str], run: int) -> set[str]:
    return {sku for sku in skus if refresh_due(key_of(sku), run, N)}


@pytest.fixture(scope="module")
def runs(
    site: DemoSite,
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[list[Run]]:
    server = redis_server.client()
    site.reset()
    logs = tmp_path_factory.mktemp("cards-logs")
    with Elasticsearch(es_node.url, request_timeout=60) as es:
        reset_store(es, server)
        done = [crawl(site, server, redis_server.url, es_node.url, logs)]
        done.append(crawl(site, server, redis_server.url, es_node.url, logs))
        site.control(revision=1)
        try:
            done.append(crawl(site, server, redis_server.url, es_node.url, logs))
        finally:
            site.control(revision=0)
        yield done
        reset_store(es, server)


def test_first_crawl_fetches_every_product_and_records_every_card(
    runs: list[Run], catalog: Catalog, redis_server: RedisServer
) -> None:
    first = runs[0]
    assert first.run == 1
    assert set(first.product_pages) == {p.sku for p in catalog.products}
    assert set(first.product_pages.values()) == {1}
    assert first.counters["recrawl/cards/fetched/new"] == PRODUCTS
    assert "recrawl/cards/skipped" not in first.counters
    assert first.counters["recrawl/cards/recorded"] == PRODUCTS
    assert first.recorded_runs == {key_of(p.sku): 1 for p in catalog.products}


def test_unchanged_shop_fetches_only_the_rolling_refresh_share(
    runs: list[Run], catalog: Catalog, redis_server: RedisServer
) -> None:
    second = runs[1]
    skus = [p.sku for p in catalog.products]
    expected = due(skus, second.run)
    assert second.run == 2
    # Exactly the products whose refresh slot is this run: about 1/N of them.
    assert set(second.product_pages) == expected
    assert abs(len(expected) - PRODUCTS / N) <= PRODUCTS / N  # 24 of 240 for N = 10
    assert second.counters["recrawl/cards/fetched/refresh"] == len(expected)
    assert second.counters["recrawl/cards/skipped"] == PRODUCTS - len(expected)
    # The refreshed products' cards are recorded again, in this run.
    assert {sku for sku in skus if second.recorded_runs[key_of(sku)] == 2} == expected


def test_a_revision_fetches_exactly_the_changed_cards_and_the_added_products(
    runs: list[Run], catalog: Catalog
) -> None:
    third = runs[2]
    revised = catalog.revised(1)
    before = catalog.by_sku
    price_changed = {
        sku for sku in revised.changed_skus if revised.by_sku[sku].price != before[sku].price
    }
    description_only = set(revised.changed_skus) - price_changed
    assert price_changed and description_only  # the revision has both kinds
    refresh = due([p.sku for p in catalog.products], third.run) - price_changed
    assert set(third.product_pages) == price_changed | set(revised.added_skus) | refresh
    assert third.counters["recrawl/cards/fetched/changed"] == len(price_changed)
    assert third.counters["recrawl/cards/fetched/new"] == len(revised.added_skus)
    assert third.counters["recrawl/cards/fetched/refresh"] == len(refresh)
    # A change on the product page only is seen by the rolling refresh (within N runs).
    assert description_only - refresh == description_only - set(third.product_pages)


def test_card_keys_are_the_items_keys() -> None:
    """A card's key is the key the pipelines compute for the detail page's item: the
    demo's SKU, hermes' product reference (its real category page)."""
    request = Request("http://127.0.0.1:8000/product/DM-00042")
    card = Card(request, {"sku": "DM-00042", "price": 12.5})
    assert card_key("demo", DemoProduct, card) == key_of("DM-00042")
    assert card_key("demo", DemoProduct, card) == schema_for(DemoProduct).key(
        "demo", plain_fields(DemoProduct(sku="DM-00042", url=request.url))
    )
    bags = "https://www.hermes.com/ca/en/category/women/bags-and-small-leather-goods/"
    category = extract_category(real_response("hermes/category_ca_2025.html", bags))
    for product in category["products"]:
        card = Card(Request(product["url"]), product)
        item = Product(**product)
        assert card_key("hermes", Product, card) == schema_for(Product).key(
            "hermes", plain_fields(item)
        )


def test_idealista_card_keys_are_the_detail_pages_keys() -> None:
    """A search card's key is the key of the listing its detail page yields (the
    property id, which keys both)."""
    url = "https://www.idealista.com/venta-viviendas/lleida-lleida/"
    cards = extract_search_cards(real_response("idealista/search_es_2025.html", url))
    assert cards
    for card in cards:
        key = card_key("idealista", PropertyListing, Card(Request(card["url"]), card))
        listing_id = re.search(r"/inmueble/(\d+)", card["url"])
        assert listing_id is not None
        assert key == f"idealista:property_listing:{listing_id.group(1)}"
