"""The generic spider of profile-driven sites (crawlers/spiders/generic.py) and the spider
loader that gives it to every profile with ``[pages]`` (crawlers/spiderloader.py).

Unit tests build spiders from profiles in a temporary directory; the crawls run
``scrapy crawl <site>`` with ``SITE_PROFILES_DIR`` on loopback sites: the demo shop
(every product compared with its generator) and a small sitemap site served here.
"""

from __future__ import annotations

import gzip
import http.server
import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.project import get_project_settings
from scrapy.utils.request import request_from_dict
from scrapy.utils.test import get_crawler
from twisted.python.failure import Failure

import crawlers.spiderloader
from crawlers.cli import producer
from crawlers.items import Product
from crawlers.profiles import ProfileError, SiteProfile
from crawlers.spiderloader import ProfileSpiderLoader
from crawlers.spiders.demo import DemoSpider
from crawlers.spiders.generic import GenericSpider, generic_spider, read_sitemap
from fingerprints.extraction.callbacks import site_spider
from harness.demo_site import DemoSite
from harness.redis_server import RedisServer
from standins.demo_site.catalog import build_catalog
from tests.crawlers.support import REPO_ROOT, crawl_env, final_stats, settings_argv

SHOP = """item_type = "product"
base_url = "http://127.0.0.1:8123"
start_page = "home"
[pages.home]
follow = [{css = "a.category-link", to = "listing"}]
[pages.listing]
url_patterns = ['^/category/']
follow = [{css = "a.product-link", to = "product-page"}, {css = "nav.pagination"}]
[pages.product-page]
url_patterns = ['^/product/']
item = "Product"
[pages.product-page.fields]
product_id = [{data = "sku"}, {url = '/product/([^/?#]+)'}]
name = [{data = "name"}, {css = "h1"}]
price = {data = "offers.price"}
"""


def write(directory: Path, site: str, toml: str) -> Path:
    path = directory / f"{site}.toml"
    path.write_text(toml)
    return path


def spider_class(tmp_path: Path, toml: str, site: str = "shop") -> type[GenericSpider]:
    write(tmp_path, site, toml)
    return generic_spider(SiteProfile.load(site, tmp_path))


# -- the class a profile makes ---------------------------------------------------------------


def test_a_profile_makes_a_spider_with_a_callback_per_page_type(tmp_path: Path) -> None:
    cls = spider_class(tmp_path, SHOP, "my_shop")
    assert cls.__name__ == "MyShopSpider" and cls.name == "my_shop"
    assert issubclass(cls, GenericSpider)
    for page in ("home", "listing", "product_page"):
        method = getattr(cls, f"parse_{page}")
        assert method.__name__ == f"parse_{page}"  # the name the frontier and gate use
    assert cls.load_profile().site == "my_shop"


def test_a_product_page_yields_its_item_and_a_listing_its_links(tmp_path: Path) -> None:
    cls = spider_class(tmp_path, SHOP)
    crawler = get_crawler(cls)
    spider = cls.from_crawler(crawler)
    body = (
        '<script type="application/ld+json">{"@type": "Product", "sku": "A-1", "name": "Knife",'
        ' "offers": {"price": "12.50"}}</script>'
    )
    product = HtmlResponse("http://127.0.0.1:8123/product/A-1", body=body, encoding="utf-8")
    (item,) = list(spider.parse_product_page(product))
    assert isinstance(item, Product)
    assert (item.product_id, item.name, item.price) == ("A-1", "Knife", 12.5)
    assert item.url == "http://127.0.0.1:8123/product/A-1" and item.job_id is None

    listing = HtmlResponse(
        "http://127.0.0.1:8123/category/tools",
        body=b'<a class="product-link" href="/product/A-1">A</a>'
        b'<nav class="pagination"><a href="/category/tools?page=2">2</a><a href="/x">x</a></nav>',
    )
    requests = list(spider.parse_listing(listing))
    assert [(r.url, r.callback.__name__) for r in requests] == [
        ("http://127.0.0.1:8123/product/A-1", "parse_product_page"),
        ("http://127.0.0.1:8123/category/tools?page=2", "parse_listing"),
    ]
    assert crawler.stats.get_value("shop/links_unrouted") == 1

    blocked = HtmlResponse("http://127.0.0.1:8123/product/B-2", body=b"<p>Are you human?</p>")
    assert list(spider.parse_product_page(blocked)) == []
    assert crawler.stats.get_value("shop/product-page_unparsed") == 1


def test_a_request_failed_for_good_is_counted_once(tmp_path: Path) -> None:
    cls = spider_class(tmp_path, SHOP)
    crawler = get_crawler(cls)
    spider = cls.from_crawler(crawler)
    failure = Failure(ConnectionRefusedError("refused"))
    failure.request = Request("http://127.0.0.1:8123/product/A-1")  # type: ignore[attr-defined]
    spider.on_error(failure)
    assert crawler.stats.get_value("shop/request_failed") == 1
    assert crawler.stats.get_value("errors/request_failed/ConnectionRefusedError") == 1


@pytest.mark.parametrize(
    ("toml", "problem"),
    [
        (
            SHOP.replace('price = {data = "offers.price"}', 'cost = {data = "offers.price"}'),
            "pages.product-page.fields: cost not a field of product (its fields: url,"
            " product_id, name, brand, category, breadcrumbs, price, currency, availability,"
            " color, material, variants, description, images, rating, review_count, attributes)",
        ),
        (
            SHOP + 'job_id = {value = "x"}\n',
            "pages.product-page.fields: job_id not a field of product (its fields: url,",
        ),
        (
            SHOP.replace('item_type = "product"', 'item_type = "gadget"'),
            "item_type: 'gadget' is not an item type of crawlers/items.py",
        ),
        (
            SHOP + '[recrawl]\ncard_fields = ["price"]\n',
            "recrawl.card_fields: listing cards need a spider module that reads them"
            " (crawlers.recrawl.cards); a profile-only site uses conditional requests only",
        ),
    ],
)
def test_rules_that_do_not_fit_the_item_type_are_one_line_profile_errors(
    tmp_path: Path, toml: str, problem: str
) -> None:
    with pytest.raises(ProfileError) as info:
        spider_class(tmp_path, toml)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"shop profile: {problem}"), message


# -- the spider loader -----------------------------------------------------------------------


@pytest.fixture
def profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A profiles directory for the loader: a profile-only site, a site with a spider module,
    a site whose spider is still to be written, two broken profiles."""
    write(tmp_path, "shop", SHOP)
    write(tmp_path, "demo", SHOP)  # crawlers/spiders/demo.py wins over [pages]
    write(tmp_path, "plain", 'item_type = "product"\nbase_url = "https://plain.example"\n')
    write(tmp_path, "broken", SHOP + "render = \n")
    write(tmp_path, "misfit", SHOP.replace("price = {", "cost = {"))
    monkeypatch.setattr(crawlers.spiderloader, "PROFILES_DIR", tmp_path)
    return tmp_path


def test_the_loader_adds_profile_only_sites_after_spider_modules(profiles: Path) -> None:
    loader = ProfileSpiderLoader(get_project_settings())
    sites = loader.list()
    assert {"shop", "broken", "misfit"} <= set(sites)
    assert "plain" not in sites  # no [pages], no spider module: nothing to crawl it with
    assert loader.load("demo") is DemoSpider
    shop = loader.load("shop")
    assert issubclass(shop, GenericSpider) and shop.__name__ == "ShopSpider"
    # Scrapy's own loader's spiders, then the profiles': by the name as a domain here.
    assert loader.find_by_request(Request("http://shop/p/1")) == ["shop"]
    assert loader.find_by_request(Request("http://demo/p/1")) == ["demo"]
    for site in ("broken", "misfit"):
        assert issubclass(loader.load(site), GenericSpider)


def test_a_broken_profile_s_spider_fails_to_start_with_its_error(profiles: Path) -> None:
    loader = ProfileSpiderLoader(get_project_settings())
    for site, problem in (
        ("broken", "not valid TOML: Invalid value (at line 16, column 10)"),
        ("misfit", "misfit profile: pages.product-page.fields: cost not a field of product"),
    ):
        with pytest.raises(SystemExit) as info:
            loader.load(site).update_settings(get_project_settings())
        assert problem in str(info.value), str(info.value)


def test_the_producer_and_the_gate_load_profile_only_sites(profiles: Path) -> None:
    # Both ask the project's SPIDER_LOADER_CLASS, not Scrapy's own loader.
    assert producer.spider_class("shop").__name__ == "ShopSpider"
    spider = site_spider("shop", "http://127.0.0.1:8123")
    assert isinstance(spider, GenericSpider) and spider.name == "shop"
    # The frontier stores requests by callback name and finds the method back.
    request = Request("http://127.0.0.1:8123/product/A-1", callback=spider.parse_product_page)
    stored = request.to_dict(spider=spider)
    assert stored["callback"] == "parse_product_page"
    assert request_from_dict(stored, spider=spider).callback == spider.parse_product_page


def scrapy(*args: str, profiles: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *args],
        cwd=REPO_ROOT,
        env={**crawl_env(), "SITE_PROFILES_DIR": str(profiles)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_scrapy_crawl_of_a_broken_profile_is_one_line_and_exit_2(tmp_path: Path) -> None:
    path = write(tmp_path, "misfit", SHOP.replace("price = {", "cost = {"))
    result = scrapy("crawl", "misfit", profiles=tmp_path)
    assert (result.returncode, result.stdout) == (2, ""), result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("configuration error: misfit profile: pages.product-page.fields:")
    assert sum("configuration error" in line for line in result.stderr.splitlines()) == 1
    path.write_text(SHOP + "render = \n")
    result = scrapy("crawl", "misfit", profiles=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"configuration error: {path}: not valid TOML: Invalid value (at line 16, column 10)"
    )


# -- crawls ----------------------------------------------------------------------------------

# The demo shop onboarded with a profile only: no spider module reads it.
DEMO_SHOP = """item_type = "product"
base_url = "{base_url}"
start_paths = ["/"]

start_page = "home"
[pages.home]
url_patterns = ['^/$']
follow = [{{css = "a.category-link", to = "listing"}}]
[pages.listing]
url_patterns = ['^/category/']
follow = [{{css = "a.product-link", to = "product"}}, {{css = "nav.pagination", to = "listing"}}]
[pages.product]
url_patterns = ['^/product/']
item = "Product"
[pages.product.fields]
product_id = [{{data = "sku"}}, {{url = '/product/([^/?#]+)'}}]
name = [{{data = "name"}}, {{css = "h1.product-title"}}]
brand = {{data = "brand.name"}}
category = {{data = "category"}}
breadcrumbs = {{css = "nav.breadcrumbs a", all = true}}
price = [{{data = "offers.price"}}, {{css = ".price-value"}}]
currency = {{data = "offers.priceCurrency"}}
availability = [
  {{data = "offers.availability"}},
  {{css = ".availability", map = {{"In stock" = "InStock"}}}},
]
rating = {{data = "aggregateRating.ratingValue"}}
review_count = {{data = "aggregateRating.reviewCount"}}
description = {{data = "description"}}
images = {{data = "image"}}

[politeness]
autothrottle = false
"""

COMPARED = (
    "name", "price", "currency", "availability", "rating", "review_count", "description",
    "brand", "category",
)  # fmt: skip


def crawl(site: str, profiles: Path, output: Path, log: Path) -> dict[str, Any]:
    """``scrapy crawl <site> -O <output>`` with the profiles of ``profiles``: its stats."""
    result = scrapy(
        "crawl", site, "-O", str(output), "-s", f"LOG_FILE={log}", "-s", "LOG_LEVEL=INFO",
        profiles=profiles,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:] + log.read_text()[-3000:]
    return final_stats(log)


def test_the_demo_shop_crawled_from_its_profile_alone_is_the_generator_s_catalog(
    tmp_path: Path,
) -> None:
    seed, products = 11, 120
    with DemoSite(run_dir=tmp_path / "site", seed=seed, products=products) as site:
        write(tmp_path, "shop", DEMO_SHOP.format(base_url=site.url))
        stats = crawl("shop", tmp_path, tmp_path / "items.jsonl", tmp_path / "crawl.log")
    rows = [json.loads(line) for line in (tmp_path / "items.jsonl").read_text().splitlines()]
    catalog = build_catalog(seed, products)
    assert sorted(row["product_id"] for row in rows) == [p.sku for p in catalog.products]
    by_sku = {row["product_id"]: row for row in rows}
    for product in catalog.products:
        row, expected = by_sku[product.sku], product.to_dict(site.url)
        assert {f: row[f] for f in COMPARED} == {f: expected[f] for f in COMPARED}, product.sku
        assert row["url"] == expected["url"] and row["images"] == [expected["image"]]
        assert row["breadcrumbs"][-1] == product.category
    assert stats["item_scraped_count"] == stats["shop/items"] == products
    assert stats["validation/valid/product"] == products
    unexpected = [k for k in stats if k.startswith("shop/") and k != "shop/items"]
    assert unexpected == [], unexpected  # nothing unparsed, unconverted or missing


ITEM_PAGE = """<html><head><title>{name}</title>
<script type="application/ld+json">{{"@context": "https://schema.org", "@type": "Product",
 "sku": "{sku}", "name": "{name}", "offers": {{"@type": "Offer", "price": "{price}",
 "priceCurrency": "EUR", "availability": "https://schema.org/InStock"}}}}</script>
</head><body><h1>{name}</h1></body></html>"""


class SitemapSite(http.server.ThreadingHTTPServer):
    """A loopback site known only through its sitemaps: robots.txt -> a sitemap index ->
    two sitemaps (one gzipped) -> item pages with JSON-LD."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _SitemapHandler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.pages: dict[str, tuple[str, bytes]] = {}

    def serve(self, path: str, content_type: str, body: str | bytes) -> None:
        self.pages[path] = (content_type, body.encode() if isinstance(body, str) else body)


class _SitemapHandler(http.server.BaseHTTPRequestHandler):
    server: SitemapSite

    def do_GET(self) -> None:
        found = self.server.pages.get(self.path)
        content_type, body = found or ("text/html", b"<html><body>not found</body></html>")
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the crawl's own log is the record


def urlset(*urls: str) -> str:
    entries = "".join(f"<url><loc>{url}</loc></url>" for url in urls)
    return f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'


@pytest.fixture
def sitemap_site() -> Iterator[SitemapSite]:
    server = SitemapSite()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# The items of the sitemap site: sku -> (name, price).
ITEMS = {f"IT-{n}": (f"Item {n}", f"{n}.50") for n in range(1, 11)}


@pytest.fixture
def maps(sitemap_site: SitemapSite, tmp_path: Path) -> Path:
    """The sitemap site's pages, and the profiles directory with its profile ("maps")."""
    site = sitemap_site
    for sku, (name, price) in ITEMS.items():
        site.serve(f"/item/{sku}", "text/html", ITEM_PAGE.format(sku=sku, name=name, price=price))
    gone = "<p>This item is no longer sold; see our other items.</p>" * 10
    site.serve("/item/IT-99", "text/html", f"<html><body><h1>Gone</h1>{gone}</body></html>")
    site.serve("/robots.txt", "text/plain", f"User-agent: *\nSitemap: {site.url}/index.xml\n")
    site.serve(
        "/index.xml",
        "application/xml",
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{site.url}/sitemaps/a.xml</loc></sitemap>"
        f"<sitemap><loc>{site.url}/sitemaps/b.xml.gz</loc></sitemap></sitemapindex>",
    )
    first = [f"{site.url}/item/IT-{n}" for n in range(1, 6)]
    second = [f"{site.url}/item/IT-{n}" for n in range(5, 11)]  # IT-5 in both
    # With a byte order mark, as some CMSs write it.
    sitemap_a = b"\xef\xbb\xbf" + urlset(*first, f"{site.url}/about").encode()
    site.serve("/sitemaps/a.xml", "application/xml", sitemap_a)
    site.serve(
        "/sitemaps/b.xml.gz",
        "application/gzip",
        gzip.compress(urlset(*second, f"{site.url}/tags/new", f"{site.url}/item/IT-99").encode()),
    )
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    write(
        profiles,
        "maps",
        f'item_type = "product"\nbase_url = "{site.url}"\nstart_paths = []\n'
        'sitemaps = ["/robots.txt"]\n[politeness]\nautothrottle = false\n'
        "[pages.item]\nurl_patterns = ['^/item/']\nitem = \"Product\"\n[pages.item.fields]\n"
        'product_id = {data = "sku"}\nname = {data = "name"}\nprice = {data = "offers.price"}\n'
        'currency = {data = "offers.priceCurrency"}\n'
        'availability = {data = "offers.availability"}\n',
    )
    return profiles


def check_maps_crawl(rows: list[dict[str, Any]], stats: dict[str, Any], base_url: str) -> None:
    assert sorted(row["product_id"] for row in rows) == sorted(ITEMS)  # each page once
    for row in rows:
        name, price = ITEMS[row["product_id"]]
        assert (row["name"], row["price"], row["currency"]) == (name, float(price), "EUR")
        assert row["availability"] == "InStock"
        assert row["url"] == f"{base_url}/item/{row['product_id']}"
    assert stats["maps/sitemap_unrouted"] == 2  # /about and /tags/new
    assert stats["maps/item_unparsed"] == 1  # /item/IT-99: no Product on it
    assert stats["item_scraped_count"] == stats["maps/items"] == len(ITEMS)
    assert "maps/sitemap_unparsed" not in stats and "maps/request_failed" not in stats


def test_a_sitemap_site_is_crawled_through_robots_txt_and_a_gzipped_sitemap(
    maps: Path, sitemap_site: SitemapSite, tmp_path: Path
) -> None:
    stats = crawl("maps", maps, tmp_path / "items.jsonl", tmp_path / "crawl.log")
    rows = [json.loads(line) for line in (tmp_path / "items.jsonl").read_text().splitlines()]
    check_maps_crawl(rows, stats, sitemap_site.url)


def test_a_profile_only_site_runs_on_the_frontier_from_the_producer(
    maps: Path, sitemap_site: SitemapSite, redis_server: RedisServer, tmp_path: Path
) -> None:
    env = {**crawl_env(), "SITE_PROFILES_DIR": str(maps)}
    job_id = "maps-frontier-test"
    produced = subprocess.run(
        [sys.executable, "-m", "crawlers.cli.producer", "maps", "--job-id", job_id,
         "--redis-url", redis_server.url],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr[-2000:]
    assert produced.stdout.strip() == f"enqueued 1 start entries for maps job {job_id}"
    log, output = tmp_path / "worker.log", tmp_path / "items.jsonl"
    settings = {
        "REDIS_URL": redis_server.url,
        "FRONTIER_IDLE_CLOSE_SECONDS": 2,
        "FRONTIER_HEARTBEAT_INTERVAL": 0.5,
        "LOG_FILE": str(log),
        "LOG_LEVEL": "INFO",
        # The feed only: no dedup or store pipelines (they need Elasticsearch).
        "ITEM_PIPELINES": {"crawlers.pipelines.validate.ValidationPipeline": 100},
    }
    worker = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "maps", "-a", f"job_id={job_id}",
         "-O", str(output), *settings_argv(settings)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert worker.returncode == 0, worker.stderr[-3000:] + log.read_text()[-3000:]
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    check_maps_crawl(rows, final_stats(log), sitemap_site.url)
    assert {row["job_id"] for row in rows} == {job_id}


def test_read_sitemap_takes_gzip_and_a_byte_order_mark_and_names_what_it_refuses() -> None:
    urlset = b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>/a</loc></url></urlset>'
    for body in (urlset, gzip.compress(urlset), b"\xef\xbb\xbf" + urlset):
        sitemap = read_sitemap(body)
        assert sitemap.type == "urlset" and [entry["loc"] for entry in sitemap] == ["/a"]
    for body, why in [
        (b"<html><body>Not found</body></html>", "not a sitemap (an XML <html> document)"),
        (b"User-agent: *", "not a sitemap (XML or gzipped XML)"),
        (b"\x1f\x8b broken", "not a sitemap (XML or gzipped XML)"),
        # More than 50 MiB unpacked (a decompression bomb) is refused, not read.
        (gzip.compress(b"<urlset>" + b" " * (51 * 1024 * 1024)), "not a sitemap"),
    ]:
        with pytest.raises(ValueError, match=re.escape(why)):
            read_sitemap(body)
