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

import asyncio
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from elasticsearch import Elasticsearch
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from core.items_schema import plain_fields, schema_for
from core.jobs.index import job_counters
from core.keys import SiteKeys
from core.recrawl.cards import CardRecord, CardState, refresh_due
from core.recrawl.layouts import baseline_id
from core.redis_client import connect_async
from crawlers.cli.producer import produce
from crawlers.items import DemoProduct, MarketplaceListing, Product, PropertyListing
from crawlers.profiles import SiteProfile
from crawlers.recrawl.cards import Card, CardGate, CardsPipeline, card_key
from crawlers.recrawl.context import ItemSeen, RecrawlContext, context_of, peek_context
from crawlers.runtime.item_context import carry_context, find_context, item_context
from crawlers.runtime.jobs import JOB_META
from crawlers.runtime.services import CrawlServices
from crawlers.spiders.demo import DemoSpider
from crawlers.spiders.facebook_marketplace import extract_search as fb_search
from crawlers.spiders.hermes import extract_category
from crawlers.spiders.idealista import extract_search_cards
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from standins.demo_site import pages
from standins.demo_site.catalog import Catalog, build_catalog
from tests.crawlers.pipelines.support import key_of, reset_store, start_store_worker
from tests.crawlers.support import NO_DEATHS, log_excerpt, wait_all
from tests.sites.support import real_page, real_response, response

PRODUCTS = 240
BASE = "http://127.0.0.1:8000"
N = SiteProfile.load("demo").recrawl.refresh_runs


@dataclass
class Run:
    job_id: str
    run: int  # the job's run sequence number
    product_pages: Counter[str]  # SKU -> product page requests in this crawl
    requests: int  # every request the site served in this crawl
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
            settings=NO_DEATHS,
        )
        for path in paths
    ]
    assert wait_all(workers, timeout=300) == [0, 0], log_excerpt(paths[0])
    served = site.access_log(since)
    pages = Counter(
        entry["path"].removeprefix("/product/")
        for entry in served
        if entry["path"].startswith("/product/")
    )
    run = server.hget(SiteKeys("demo").job_seq_of, job.job_id)
    assert run is not None, "the job's run is assigned by its first listing page"
    recorded = {}
    for key, value in server.hgetall(SiteKeys("demo").card_state).items():
        record = CardRecord.decode(value)
        assert record is not None
        recorded[key.decode()] = record.run
    counters = job_counters(server, "demo", job.job_id)
    return Run(job.job_id, int(run), pages, len(served), counters, recorded)


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
    # The budget: at most 30% of the first crawl's requests.
    assert second.requests <= 0.3 * runs[0].requests, (second.requests, runs[0].requests)


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


# -- the helper and the pipeline against a real Redis, without a crawl -----------------------


def demo_crawler(redis_url: str, **settings: Any) -> Crawler:
    crawler = get_crawler(
        DemoSpider,
        {
            "REDIS_URL": redis_url,
            "ELASTICSEARCH_URL": "http://127.0.0.1:9/",
            "RECRAWL_CARD_SKIP": True,  # the add-on's default (get_crawler has no add-on)
            **settings,
        },
    )
    crawler.spider = DemoSpider.from_crawler(crawler, base_url=BASE)
    return crawler


def listing_response(catalog: Catalog, job_id: str) -> HtmlResponse:
    html = pages.listing(catalog, "kitchen", 1, "v1", BASE)
    assert html is not None
    request = Request(f"{BASE}/category/kitchen", meta={JOB_META: job_id})
    return HtmlResponse(request.url, body=html.encode(), encoding="utf-8", request=request)


def listing_outputs(crawler: Crawler, response: HtmlResponse) -> list[Any]:
    spider = crawler.spider
    assert isinstance(spider, DemoSpider)
    gate = CrawlServices.of(crawler).component(CardGate)

    async def main() -> list[Any]:
        await gate.spider_opened()
        try:
            return [output async for output in spider.parse_listing(response)]
        finally:
            gate.spider_closed()
            await CrawlServices.of(crawler).aclose()

    return asyncio.run(main())


def test_unchanged_cards_become_item_seen_and_the_others_requests(
    catalog: Catalog, redis_server: RedisServer
) -> None:
    server = redis_server.client()
    server.flushdb()
    crawler = demo_crawler(redis_server.url)
    products = catalog.by_category["kitchen"][: pages.PAGE_SIZE]
    keys = [key_of(p.sku) for p in products]
    first = listing_outputs(crawler, listing_response(catalog, "job-a"))
    fetched = [
        r for r in first if isinstance(r, Request) and r.callback == crawler.spider.parse_product
    ]  # type: ignore[union-attr]
    assert [r.meta["recrawl"].key for r in fetched] == keys
    assert all(r.meta["recrawl"].full for r in fetched)  # new cards: fetched in full

    # Their complete products stored and recorded in job-a (run 1); dedup knows them.
    server.hset(SiteKeys("demo").item_hashes, mapping=dict.fromkeys(keys, "content"))

    async def record() -> None:
        client = connect_async(redis_server.url)
        try:
            await CardState(client, "demo").record(
                "job-a",
                [(r.meta["recrawl"].key, r.meta["recrawl"].card_hash) for r in fetched],
                layout=baseline_id("demo"),  # the layout the worker reads (no producer's)
            )
        finally:
            await client.aclose()

    asyncio.run(record())
    second = listing_outputs(crawler, listing_response(catalog, "job-b"))
    seen = [o for o in second if isinstance(o, ItemSeen)]
    requests = [
        o for o in second if isinstance(o, Request) and o.callback != crawler.spider.parse_listing
    ]  # type: ignore[union-attr]
    due_now = {key for key in keys if refresh_due(key, 2, N)}
    assert {r.meta["recrawl"].key for r in requests} == due_now
    assert all(r.meta["recrawl"].full for r in requests)
    assert {s.key for s in seen} == set(keys) - due_now
    one = seen[0]
    assert (one.item_type, one.reason, one.job_id) == ("demo_product", "card_unchanged", "job-b")
    assert one.url == f"{BASE}/product/{one.key.rsplit(':', 1)[1]}"
    assert getattr(one, "callback", "parse_product") == "parse_product"
    stats = crawler.stats
    assert stats is not None
    assert stats.get_value("recrawl/cards/skipped") == len(seen)
    assert stats.get_value("recrawl/cards/fetched/refresh") == len(due_now)
    assert stats.get_value("recrawl/cards/fetched/new") == len(keys)


def test_a_redis_error_fetches_every_card(catalog: Catalog) -> None:
    crawler = demo_crawler("redis://127.0.0.1:9/0")  # nothing listens there
    outputs = listing_outputs(crawler, listing_response(catalog, "job-a"))
    products = [o for o in outputs if o.callback == crawler.spider.parse_product]  # type: ignore[union-attr]
    cards = len(catalog.by_category["kitchen"][: pages.PAGE_SIZE])
    assert len(products) == cards and all(isinstance(o, Request) for o in outputs)
    assert all("recrawl" not in r.meta for r in products)
    stats = crawler.stats
    assert stats is not None
    assert stats.get_value("recrawl/cards/errors") == 1
    assert stats.get_value("recrawl/cards/fetched/error") == cards


def test_recrawl_card_skip_off_fetches_every_card_without_redis(catalog: Catalog) -> None:
    # Nothing listens at this address: any Redis call would be counted as an error.
    crawler = demo_crawler("redis://127.0.0.1:9/0", RECRAWL_CARD_SKIP=False)
    outputs = listing_outputs(crawler, listing_response(catalog, "job-a"))
    products = [o for o in outputs if o.callback == crawler.spider.parse_product]  # type: ignore[union-attr]
    assert len(products) == len(catalog.by_category["kitchen"][: pages.PAGE_SIZE])
    assert all("recrawl" not in r.meta for r in products)
    stats = crawler.stats
    assert stats is not None and stats.get_value("recrawl/cards/errors") is None


def test_the_pipeline_records_complete_items_only_and_leaves_the_context(
    catalog: Catalog, redis_server: RedisServer
) -> None:
    server = redis_server.client()
    server.flushdb()
    crawler = demo_crawler(redis_server.url)
    pipeline = CardsPipeline.from_crawler(crawler)
    product = catalog.products[0]
    url = f"{BASE}{product.url}"

    def item(**extra: Any) -> DemoProduct:
        return DemoProduct(sku=product.sku, url=url, job_id="job-a", **extra)

    complete, incomplete, wrong, bare = item(), item(incomplete=["reviews"]), item(), item()
    context = RecrawlContext(key=key_of(product.sku), card_hash="h", full=True)
    item_context(complete).recrawl = context
    item_context(incomplete).recrawl = context
    item_context(wrong).recrawl = RecrawlContext(key=key_of("DM-99999"), card_hash="h")
    seen = ItemSeen(key_of(product.sku), "demo_product", url, "card_unchanged", "job-a")

    async def main() -> list[Any]:
        await pipeline.open_spider()
        try:
            return [
                await pipeline.process_item(one)
                for one in (incomplete, wrong, bare, seen, complete, complete)
            ]
        finally:
            await pipeline.close_spider()
            await CrawlServices.of(crawler).aclose()

    assert asyncio.run(main()) == [incomplete, wrong, bare, seen, complete, complete]
    record = CardRecord.decode(server.hget(SiteKeys("demo").card_state, key_of(product.sku)))
    assert record is not None and (record.card_hash, record.run) == ("h", 1)
    assert server.hlen(SiteKeys("demo").card_state) == 1
    assert context_of(complete) is context  # peeked, left for the pipeline after
    stats = crawler.stats
    assert stats is not None
    assert stats.get_value("recrawl/cards/recorded") == 1  # the re-delivery wrote nothing
    assert stats.get_value("recrawl/cards/key_mismatch") == 1


def test_validation_copies_keep_their_context() -> None:
    old, new = DemoProduct(sku="A", url=BASE), DemoProduct(sku="A", url=BASE)
    context = item_context(old)
    context.recrawl = RecrawlContext(key="demo:demo_product:A")
    assert peek_context(old) is context.recrawl and find_context(new) is None
    carry_context(old, new)
    assert (find_context(old), find_context(new)) == (None, context)
    assert peek_context(new) == RecrawlContext(key="demo:demo_product:A")
    carry_context(new, new)  # the same instance: nothing moves
    assert find_context(new) is context


def test_marketplace_card_keys_are_the_item_pages_keys() -> None:
    url = "https://www.facebook.com/marketplace/houston/search/?query=bike"
    listings, _ = fb_search(response(real_page("facebook_marketplace/search.html"), url))
    assert listings
    for listing in listings:
        key = card_key(
            "facebook_marketplace", MarketplaceListing, Card(Request(listing["url"]), listing)
        )
        assert key == f"facebook_marketplace:marketplace_listing:{listing['listing_id']}"
        assert listing["url"].endswith(f"/marketplace/item/{listing['listing_id']}/")
