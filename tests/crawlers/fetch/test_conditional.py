"""Re-crawls of the demo shop with conditional requests, on the real stack.

A first crawl records each product page's validators once its product is stored; a
second crawl of the unchanged shop gets 304 for every product page (counted from the
site's access log) and parses none; after a revision exactly the changed and added
products are fetched 200 and parsed again; a product stored incomplete (its reviews API
down) keeps no validators, so its page is fetched in full next time.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
import redis
from elasticsearch import Elasticsearch
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from core.fetch.blocks import classify
from core.jobs.index import job_counters
from core.keys import SiteKeys
from core.recrawl.layouts import NO_BASELINE
from crawlers.cli.producer import produce
from crawlers.fetch.conditional import (
    CONDITIONAL_META,
    ConditionalRequests,
    PageValidators,
    yield_seen,
)
from crawlers.profile_schema import Recrawl
from crawlers.recrawl.context import RECRAWL_META, ItemSeen, RecrawlContext
from crawlers.runtime.services import CrawlServices
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from standins.demo_site.catalog import Catalog, build_catalog
from tests.crawlers.pipelines.support import key_of, reset_store, start_store_worker
from tests.crawlers.support import final_stats, log_excerpt, wait_all

PRODUCTS = 240
# Parts retried quickly: the incomplete test's reviews API stays down for good.
FAST_PARTS = {"PART_RETRY_TIMES": 1, "PART_RETRY_BACKOFF": 0.2, "RETRY_TIMES": 1}
# The pipelines of the "seen" part count an ItemSeen unchanged (ItemSeen.callback marks it).


@dataclass
class Crawl:
    job_id: str
    access: list[dict[str, Any]]  # the site's access log of this crawl
    stats: dict[str, Any]  # the worker's closing stats

    def products(self, status: int) -> set[str]:
        """The product pages answered ``status`` (their paths)."""
        return {
            e["path"]
            for e in self.access
            if e["path"].startswith("/product/") and e["status"] == status
        }

    def reviews_requests(self) -> int:
        return sum(1 for e in self.access if e["path"].startswith("/api/products/"))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSite]:
    run_dir = tmp_path_factory.mktemp("conditional-site")
    with DemoSite(run_dir=run_dir, products=PRODUCTS, name="conditional-site") as server:
        yield server


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return build_catalog(n_products=PRODUCTS)


@pytest.fixture(scope="module")
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


def crawl(
    site: DemoSite,
    server: redis.Redis,
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
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
        redis_url=redis_server.url,
        es_url=es_node.url,
        # Conditional GETs alone: the listing-card skip (tests/crawlers/recrawl/test_cards.py) would
        # leave no product page to ask.
        settings={"RECRAWL_CARD_SKIP": False, **(settings or {})},
    )
    assert wait_all([worker], timeout=300) == [0], log_excerpt(log)
    return Crawl(job.job_id, site.access_log(since=since), final_stats(log))


def validators(server: redis.Redis) -> dict[str, dict[str, Any]]:
    raw = server.hgetall(SiteKeys("demo").page_validators)
    return {url.decode(): json.loads(value) for url, value in raw.items()}


def etag_of(site: DemoSite, path: str) -> str:
    with urllib.request.urlopen(site.url + path, timeout=30) as response:
        return str(response.headers["ETag"])


def test_recrawls_fetch_only_what_changed(
    site: DemoSite,
    catalog: Catalog,
    stack: tuple[redis.Redis, Elasticsearch],
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
    tmp_path: Path,
) -> None:
    server, _ = stack
    all_pages = {p.url for p in catalog.products}

    # 1. The first crawl: every product page fetched in full, its validators recorded.
    first = crawl(site, server, redis_server, es_node, tmp_path)
    assert first.products(200) == all_pages and not first.products(304)
    assert not any(e["conditional"] for e in first.access)
    records = validators(server)
    assert set(records) == {site.url + path for path in all_pages}
    for product in catalog.products[:20]:
        record = records[site.url + product.url]
        assert record["key"] == key_of(product.sku) and record["item_type"] == "demo_product"
        assert record["etag"] == etag_of(site, product.url)
        assert record["last_modified"].endswith(" GMT")
    assert first.stats.get("recrawl/record/validators") == PRODUCTS

    # 2. The unchanged shop again: every product page answers 304, none is parsed.
    second = crawl(site, server, redis_server, es_node, tmp_path)
    assert second.products(304) == all_pages and not second.products(200)
    assert second.reviews_requests() == 0  # no product page parsed, no reviews asked for
    stats = second.stats
    assert stats.get("recrawl/conditional/sent") == PRODUCTS
    assert stats.get("recrawl/conditional/not_modified") == PRODUCTS
    assert "recrawl/conditional/modified" not in stats and "demo/products" not in stats
    # One ItemSeen per 304 reached the pipelines, each counted unchanged and stored.
    assert stats.get("item_scraped_count", 0) == PRODUCTS
    assert "item_dropped_count" not in stats
    counters = job_counters(server, "demo", second.job_id)
    assert counters["items/unchanged"] == PRODUCTS
    assert counters.get("items/new", 0) == counters.get("items/changed", 0) == 0

    # 3. A revision: exactly the changed and added products are fetched 200 and parsed;
    # one changed and one added product lose their reviews API (stored incomplete).
    revised = catalog.revised(1)
    changed = sorted(revised.changed_skus)
    added = sorted(revised.added_skus)
    broken = [changed[0], added[0]]
    site.control(
        revision=1,
        unavailable={
            "rate": 1.0,
            "attempts": None,
            "paths": [f"/api/products/{sku}/reviews" for sku in broken],
        },
    )
    third = crawl(site, server, redis_server, es_node, tmp_path, settings=FAST_PARTS)
    fetched = {revised.by_sku[sku].url for sku in [*changed, *added]}
    assert third.products(200) == fetched
    assert third.products(304) == all_pages - fetched
    assert third.stats.get("recrawl/conditional/modified") == len(changed)
    assert third.stats.get("recrawl/conditional/not_modified") == PRODUCTS - len(changed)
    assert third.stats.get("demo/incomplete") == len(broken)
    assert third.stats.get("demo/products") == len(changed) + len(added) - len(broken)

    records = validators(server)
    for sku in [*changed, *added]:
        url = site.url + revised.by_sku[sku].url
        if sku in broken:
            assert url not in records, sku  # incomplete: fetched in full next time
        else:
            assert records[url]["etag"] == etag_of(site, revised.by_sku[sku].url), sku
    assert len(records) == PRODUCTS + len(added) - len(broken)


# -- the middleware, without a crawl (real Redis) ---------------------------------------

ITEM_URL = "http://shop.test/product/DM-00001"
# Recorded under the layout the unit site has: no accepted baseline (core.recrawl.layouts).
RECORD = PageValidators(
    '"abc"', "Mon, 01 Jan 2024 00:00:00 GMT", "unit:demo_product:DM-1", "demo_product", NO_BASELINE
)


class UnitSpider(Spider):
    name = "unit"
    profile = SimpleNamespace(recrawl=Recrawl(item_callbacks=("parse_item",)))
    handle_httpstatus_list: ClassVar[list[int]] = [404]

    def parse_item(self, response: Response) -> None: ...

    def parse_other(self, response: Response) -> None: ...


def unit_crawler(redis_url: str | None, spidercls: type[Spider] = UnitSpider) -> Crawler:
    crawler = get_crawler(
        spidercls,
        {"REDIS_URL": redis_url, "RECRAWL_CONDITIONAL_BATCH": 500, "RECRAWL_CONDITIONAL": True},
    )
    crawler.spider = spidercls.from_crawler(crawler)
    return crawler


def stats_of(crawler: Crawler) -> dict[str, Any]:
    assert crawler.stats is not None
    return {k: v for k, v in crawler.stats.get_stats().items() if k.startswith("recrawl/")}


def test_off_without_redis_or_without_item_callbacks(redis_server: RedisServer) -> None:
    with pytest.raises(NotConfigured):
        ConditionalRequests.from_crawler(unit_crawler(None))

    class Unconditional(UnitSpider):
        profile = SimpleNamespace(
            recrawl=Recrawl(conditional=False, item_callbacks=("parse_item",))
        )

    class NoCallbacks(UnitSpider):
        profile = SimpleNamespace(recrawl=Recrawl())

    class NoProfile(Spider):
        name = "unit"

    for spidercls in (Unconditional, NoCallbacks, NoProfile):
        with pytest.raises(NotConfigured):
            ConditionalRequests.from_crawler(unit_crawler(redis_server.url, spidercls))


def test_validators_go_out_and_a_304_comes_back_as_item_seen(redis_server: RedisServer) -> None:
    server = redis_server.client()
    server.delete(SiteKeys("unit").page_validators)
    server.hset(SiteKeys("unit").page_validators, ITEM_URL, RECORD.to_json())
    crawler = unit_crawler(redis_server.url)
    spider = crawler.spider
    assert isinstance(spider, UnitSpider)
    middleware = ConditionalRequests.from_crawler(crawler)

    async def scenario() -> None:
        request = Request(ITEM_URL, callback=spider.parse_item, meta={"job_id": "job-1"})
        await middleware.process_request(request)
        assert request.headers[b"If-None-Match"] == b'"abc"'
        assert request.headers[b"If-Modified-Since"] == RECORD.last_modified.encode()  # type: ignore[union-attr]
        assert request.meta["handle_httpstatus_list"] == [404, 304]  # the spider's kept
        assert request.meta["dont_cache"] is True

        # A retry of it (same URL) is not looked up again; a redirect elsewhere is stripped.
        retry = request.replace()
        await middleware.process_request(retry)
        moved = request.replace(url="http://shop.test/product/elsewhere")
        await middleware.process_request(moved)
        assert b"If-None-Match" not in moved.headers and CONDITIONAL_META not in moved.meta

        answer = middleware.process_response(
            request, Response(ITEM_URL, status=304, request=request)
        )
        assert answer.request is not None and answer.request.callback is yield_seen
        (seen,) = list(yield_seen(answer, **answer.request.cb_kwargs))
        assert isinstance(seen, ItemSeen)
        assert (seen.key, seen.item_type, seen.url, seen.reason, seen.job_id) == (
            RECORD.key,
            "demo_product",
            ITEM_URL,
            "not_modified",
            "job-1",
        )
        assert seen.callback == "parse_item"

        # Not item requests, rendered ones and full fetches never carry validators.
        for untouched in (
            Request(ITEM_URL, callback=spider.parse_other),
            Request(ITEM_URL, callback=spider.parse_item, meta={"playwright": True}),
            Request(
                ITEM_URL, callback=spider.parse_item, meta={RECRAWL_META: RecrawlContext(full=True)}
            ),
        ):
            await middleware.process_request(untouched)
            assert b"If-None-Match" not in untouched.headers, untouched.meta
        await CrawlServices.of(crawler).aclose()

    asyncio.run(scenario())
    assert stats_of(crawler) == {
        "recrawl/conditional/sent": 1,
        "recrawl/conditional/not_modified": 1,
    }


def test_a_200_notes_its_validators_in_the_context(redis_server: RedisServer) -> None:
    crawler = unit_crawler(redis_server.url)
    spider = crawler.spider
    assert isinstance(spider, UnitSpider)
    middleware = ConditionalRequests.from_crawler(crawler)
    headers = {"ETag": '"v2"', "Last-Modified": "Tue, 02 Jan 2024 00:00:00 GMT"}

    created = Request(ITEM_URL, callback=spider.parse_item)
    middleware.process_response(created, Response(ITEM_URL, headers=headers, body=b"x"))
    context = created.meta[RECRAWL_META]
    assert (context.url, context.etag, context.last_modified) == (
        ITEM_URL,
        '"v2"',
        "Tue, 02 Jan 2024 00:00:00 GMT",
    )
    # A later 200 without validators (after a retried block page) leaves none behind.
    middleware.process_response(created, Response(ITEM_URL, body=b"x"))
    assert (context.etag, context.last_modified) == (None, None)

    carded = RecrawlContext(key="unit:demo_product:DM-1", card_hash="h")
    kept = Request(ITEM_URL, callback=spider.parse_item, meta={RECRAWL_META: carded})
    middleware.process_response(kept, Response(ITEM_URL, headers=headers, body=b"x"))
    assert kept.meta[RECRAWL_META] is carded and carded.etag == '"v2"'

    bare = Request(ITEM_URL, callback=spider.parse_item)
    middleware.process_response(bare, Response(ITEM_URL, body=b"x"))
    other = Request(ITEM_URL, callback=spider.parse_other)
    middleware.process_response(other, Response(ITEM_URL, headers=headers, body=b"x"))
    assert RECRAWL_META not in bare.meta and RECRAWL_META not in other.meta


def test_lookups_of_requests_in_flight_are_coalesced(redis_server: RedisServer) -> None:
    server = redis_server.client()
    key = SiteKeys("unit").page_validators
    server.delete(key)
    urls = [f"http://shop.test/product/DM-{n:05d}" for n in range(300)]
    server.hset(key, mapping={url: RECORD.to_json() for url in urls[::2]})
    crawler = unit_crawler(redis_server.url)
    spider = crawler.spider
    assert isinstance(spider, UnitSpider)
    middleware = ConditionalRequests.from_crawler(crawler)
    calls = []

    async def scenario() -> list[Request]:
        store = middleware.store
        pipeline = store.server.pipeline

        def counted(*args: Any, **kwargs: Any) -> Any:
            pipe = pipeline(*args, **kwargs)
            hmget = pipe.hmget

            def hmget_counted(key: str, urls: list[str]) -> Any:
                calls.append(len(urls))
                return hmget(key, urls)

            pipe.hmget = hmget_counted  # type: ignore[method-assign]
            return pipe

        store.server.pipeline = counted  # type: ignore[method-assign]
        requests = [Request(url, callback=spider.parse_item) for url in urls]
        await asyncio.gather(*(middleware.process_request(r) for r in requests))
        await CrawlServices.of(crawler).aclose()
        return requests

    requests = asyncio.run(scenario())
    assert sum(calls) == 300 and len(calls) <= 3
    conditional = [r.url for r in requests if b"If-None-Match" in r.headers]
    assert conditional == urls[::2]


def test_a_record_of_another_layout_or_an_unparsed_page_type_is_no_shortcut(
    redis_server: RedisServer,
) -> None:
    """Validators recorded under another accepted baseline (the job's, as the producer
    recorded it, over the worker's own) are void; so are those of a callback whose pages
    the job could not parse. Either way the page is fetched whole."""
    server = redis_server.client()
    keys = SiteKeys("unit")
    for name in (keys.page_validators, keys.job_layout("job-new"), keys.job_unparsed("job-u")):
        server.delete(name)
    server.hset(keys.page_validators, ITEM_URL, RECORD.to_json())
    server.set(keys.job_layout("job-new"), "0123456789abcdef")  # accepted since the record
    server.sadd(keys.job_unparsed("job-u"), "parse_item")
    crawler = unit_crawler(redis_server.url)
    spider = crawler.spider
    assert isinstance(spider, UnitSpider)
    middleware = ConditionalRequests.from_crawler(crawler)

    def item_request(job_id: str) -> Request:
        return Request(ITEM_URL, callback=spider.parse_item, meta={"job_id": job_id})

    async def scenario() -> list[Request]:
        requests = [item_request(job) for job in ("job-new", "job-u", "job-same", "job-local")]
        middleware.watch._stopped.add(("job-local", "parse_item"))  # this worker saw it
        for request in requests:
            await middleware.process_request(request)
        await CrawlServices.of(crawler).aclose()
        return requests

    new, unparsed, same, local = asyncio.run(scenario())
    assert [b"If-None-Match" in r.headers for r in (new, unparsed, same, local)] == [
        False,
        False,
        True,  # a job of the record's layout (the worker's own: no producer's)
        False,
    ]
    assert stats_of(crawler) == {
        "recrawl/conditional/layout_changed": 1,
        "recrawl/conditional/unparsed": 2,
        "recrawl/conditional/sent": 1,
    }


def test_redis_down_sends_the_request_unconditionally(redis_server: RedisServer) -> None:
    crawler = unit_crawler("redis://127.0.0.1:1")  # nothing listens there
    spider = crawler.spider
    assert isinstance(spider, UnitSpider)
    middleware = ConditionalRequests.from_crawler(crawler)
    request = Request(ITEM_URL, callback=spider.parse_item)

    async def scenario() -> None:
        await middleware.process_request(request)
        await CrawlServices.of(crawler).aclose()

    asyncio.run(scenario())
    assert b"If-None-Match" not in request.headers and CONDITIONAL_META not in request.meta
    assert stats_of(crawler) == {"recrawl/conditional/lookup_failed": 1}


def test_a_304_is_an_ok_answer_and_records_read_back() -> None:
    """Not a block, an error, a retry or a ban (all decided on this verdict): a 304 is the
    answer asked for. A record that is not one is no record (never a failed request)."""
    answer = Response(ITEM_URL, status=304)
    assert classify(answer.status, answer.headers, answer.body).kind == "ok"
    assert PageValidators.from_json(RECORD.to_json()) == RECORD
    assert json.loads(RECORD.to_json()) == {
        "etag": '"abc"',
        "last_modified": "Mon, 01 Jan 2024 00:00:00 GMT",
        "key": "unit:demo_product:DM-1",
        "item_type": "demo_product",
        "layout": NO_BASELINE,
    }
    for junk in (b"{", b"[]", b'{"key": "k"}', b'{"key": "k", "item_type": "t"}'):
        assert PageValidators.from_json(junk) is None
