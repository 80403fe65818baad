"""The two shipped profile-only sites without structured data, end to end: ``scrape-
werkstatt`` and ``scrape-sayings`` registered from their shipped profiles, fixtures and
baselines, run on the local stack (real Prefect server and worker, Redis, ES, the OpenAI
stub) against the local sites (standins.plain_sites): gate, producer, generic spider workers,
store, chunks, report. What is stored is compared with the site's own generator, field
by field; the declared item type of sayings (``[item_fields]``) is checked on the real
node: its index mapping, searches on its typed fields, and the Kibana saved search the
wiring derives for it.

The shipped profiles and site directories are copied to a temporary directory with the
base URL of the local site (``SITE_PROFILES_DIR``, ``FINGERPRINT_SITES_DIR``); nothing
else in them changes.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import tomllib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from core.items_schema import schema_by_type
from crawlers.profiles import SiteProfile
from harness.es_node import ElasticsearchNode
from harness.plain_site import PlainSite
from harness.prefect_server import PrefectServer
from harness.redis_server import RedisServer
from orchestration import kibana_objects
from standins.plain_sites import data, pages
from tests.orchestration.profile_flows import (
    FlowStack,
    chunked_items,
    flow_worker,
    fresh_profile_dirs,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
SEED = 11  # the seed the shipped fixtures and baselines were taken from
# Small catalogues: the gate's sample pages exist from 65 products on (a category's
# second page), and 60 quotes page through every list.
PRODUCTS, QUOTES = 70, 60
SITES = ("werkstatt", "sayings")


@dataclass
class PlainStack:
    flows: FlowStack
    urls: dict[str, str]  # site -> the local site's base URL

    def stored(self, site: str) -> list[dict[str, Any]]:
        """Every stored item (a page of quotes holds many: not one per URL)."""
        es = self.flows.es()
        es.indices.refresh(index=f"items-{site}")
        hits = es.search(index=f"items-{site}", size=1000, query={"match_all": {}})
        return [hit["_source"] for hit in hits["hits"]["hits"]]


def ship(site: str, url: str, profiles: Path, sites: Path) -> None:
    """The shipped profile with the local site's base URL, and its fixtures and baseline."""
    text = (REPO_ROOT / "crawlers" / "profiles" / f"{site}.toml").read_text()
    shipped_url = tomllib.loads(text)["base_url"]
    (profiles / f"{site}.toml").write_text(text.replace(f'"{shipped_url}"', f'"{url}"'))
    shutil.copytree(REPO_ROOT / "fingerprints" / "sites" / site, sites / site)


@pytest.fixture(scope="module")
def plain_stack(
    tmp_path_factory: pytest.TempPathFactory,
    prefect_server: PrefectServer,
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
) -> Iterator[PlainStack]:
    dirs = fresh_profile_dirs(tmp_path_factory.mktemp("plain-sites"), redis_server, es_node, SITES)
    with (
        PlainSite("werkstatt", seed=SEED, items=PRODUCTS, run_dir=dirs.run_dir) as shop,
        PlainSite("sayings", seed=SEED, items=QUOTES, run_dir=dirs.run_dir) as board,
    ):
        urls = {"werkstatt": shop.url, "sayings": board.url}
        for site, url in urls.items():
            ship(site, url, dirs.profiles, dirs.sites)
        with flow_worker(dirs, prefect_server, redis_server, es_node) as flows:
            yield PlainStack(flows, urls)


def report_figures(report: str) -> dict[str, str]:
    """The report's ``| metric | value |`` rows."""
    return {
        match[1].strip(): match[2].strip()
        for match in re.finditer(r"^\|\s*([^|]+?)\s*\|\s*([^|]*?)\s*\|\s*$", report, re.M)
    }


def assert_report(stack: PlainStack, site: str, run_id: str, **figures: int) -> None:
    """The run's report: the figures given, a clean crawl, the chunks the index holds."""
    report = stack.flows.artifact(run_id, f"scrape-{site}-report")
    assert f"`items-{site}`" in report and f"`chunks-{site}`" in report
    table = report_figures(report)
    print(site, {k: table[k] for k in ("items scraped", "new", "stored", "pages fetched")})
    for name in ("invalid (dropped)", "errors (ERROR log lines)", "pages unparsed", "blocked"):
        assert table[name] == "0", (name, table[name])
    assert table["requests failed for good"] == "0"
    assert table["error responses (HTTP 4xx/5xx)"] == "0"
    assert table["block rate"] == f"0.00% (0 of {table['pages fetched']} pages fetched)"
    es = stack.flows.es()
    es.indices.refresh(index=f"chunks-{site}")
    assert table["chunks indexed"] == str(es.count(index=f"chunks-{site}")["count"])
    for name, value in figures.items():
        assert table[name.replace("_", " ")] == str(value), (name, table)


def test_scrape_werkstatt_stores_every_product_with_its_variants(plain_stack: PlainStack) -> None:
    run = plain_stack.flows.run("scrape-werkstatt")
    assert run["state"]["type"] == "COMPLETED", run["state"]
    stored_items = plain_stack.stored("werkstatt")
    by_id = {item["product_id"]: item for item in stored_items}
    assert len(stored_items) == PRODUCTS
    products = data.products(SEED, PRODUCTS)
    assert set(by_id) == {p.sku for p in products}  # through every category page
    wrong = []
    for product in products:
        item = by_id[product.sku]
        expected = {
            "url": f"{plain_stack.urls['werkstatt']}/artikel/{product.sku}-{product.slug}",
            "name": product.name,
            "brand": product.brand,
            "category": product.category.title(),
            "price": product.price,
            "currency": "EUR",
            "color": product.colour,
            "material": product.material,
            "variants": list(product.variants),
            "rating": float(product.rating),
            "review_count": product.reviews,
            "description": "\n\n".join(product.description),
            "images": [f"/bilder/{product.sku}-{n}.jpg" for n in range(1, product.images + 1)],
        }
        item = dict(item, images=[urlsplit(url).path for url in item["images"]])
        wrong += [(product.sku, k, item.get(k), v) for k, v in expected.items() if item.get(k) != v]
    assert wrong == []
    assert any(len(p.variants) > 1 for p in products) and any(p.price >= 1000 for p in products)
    assert chunked_items(plain_stack.flows, "chunks-werkstatt") == PRODUCTS
    # Every page once: home, each category's pages (12 a page), each product.
    per_category = Counter(p.category for p in products)
    lists = sum(-(-n // pages.SHOP_PER_PAGE) for n in per_category.values())
    assert_report(
        plain_stack, "werkstatt", run["id"],
        items_scraped=PRODUCTS, new=PRODUCTS, stored=PRODUCTS, pages_fetched=1 + lists + PRODUCTS,
    )  # fmt: skip


def test_scrape_sayings_stores_every_quote_of_every_page_as_its_declared_type(
    plain_stack: PlainStack,
) -> None:
    run = plain_stack.flows.run("scrape-sayings")
    assert run["state"]["type"] == "COMPLETED", run["state"]
    items = plain_stack.stored("sayings")
    by_id = {item["quote_id"]: item for item in items}
    quotes = data.quotes(SEED, QUOTES)
    # Every quote, the later pages' too: 10 a page, reached through the next links.
    assert set(by_id) == {q.quote_id for q in quotes} and len(items) == QUOTES
    wrong = []
    for quote in quotes:
        expected = {
            "text": quote.text,
            "author": quote.author,
            "tags": list(quote.tags),
            "like_count": quote.likes,
            "published_at": f"{quote.year}-{quote.month:02d}-{quote.day:02d}",
        }
        item = by_id[quote.quote_id]
        wrong += [(quote.quote_id, k, item.get(k), v) for k, v in expected.items() if item[k] != v]
    assert wrong == []
    assert chunked_items(plain_stack.flows, "chunks-sayings") == QUOTES
    # Home, then every list page (all quotes and each tag's, 10 a page), each page once; a
    # quote on the lists of several tags is one item of the job.
    per_tag = Counter(tag for q in quotes for tag in q.tags)
    lists = sum(-(-n // pages.QUOTES_PER_PAGE) for n in [*per_tag.values(), QUOTES])
    assert sum(per_tag.values()) > QUOTES  # quotes were read more than once
    assert_report(
        plain_stack, "sayings", run["id"],
        items_scraped=QUOTES, new=QUOTES, stored=QUOTES, pages_fetched=1 + lists,
    )  # fmt: skip

    # The declared type on the real node: its mapping, applied; searches on typed fields.
    profile = SiteProfile.load("sayings", plain_stack.flows.profiles)
    schema = schema_by_type(profile.item_type)
    es = plain_stack.flows.es()
    index = next(iter(es.indices.get_mapping(index="items-sayings")))
    mapping = es.indices.get_mapping(index="items-sayings")[index]["mappings"]["properties"]
    for name in profile.item_fields:
        assert mapping[name]["type"] == schema.es_properties[name]["type"], name
    typed = {mapping[n]["type"] for n in ("published_at", "like_count", "tags")}
    assert typed == {"date", "long", "keyword"}
    dated = {"range": {"published_at": {"gte": "2020-01-01"}}}
    recent = es.count(index="items-sayings", query=dated)
    assert recent["count"] == sum(q.year >= 2020 for q in quotes)
    liked = es.count(index="items-sayings", query={"range": {"like_count": {"gte": 1000}}})
    assert liked["count"] == sum(q.likes >= 1000 for q in quotes) > 0
    for tag, count in per_tag.items():
        assert es.count(index="items-sayings", query={"term": {"tags": tag}})["count"] == count

    # The Kibana saved search derived for it: its data view covers the index, its columns
    # are mapped fields, its query finds the site's items.
    objects = kibana_objects.saved_objects(plain_stack.flows.profiles)
    search = next(o for o in objects if o["id"] == "platform-items-sayings")
    view_id = search["references"][0]["id"]
    view = next(o for o in objects if o["type"] == "index-pattern" and o["id"] == view_id)
    assert fnmatch.fnmatch("items-sayings", view["attributes"]["title"])
    columns = search["attributes"]["columns"]
    assert "text" in columns and all(c.split(".")[0] in mapping for c in columns), columns
    source = json.loads(search["attributes"]["kibanaSavedObjectMeta"]["searchSourceJSON"])
    kql = source["query"]["query"]
    assert es.count(index="items-sayings", q=kql.replace(" : ", ":"))["count"] == QUOTES


def test_the_workers_read_the_shipped_profiles_only(plain_stack: PlainStack) -> None:
    """The copies differ from the shipped profiles by their base URL alone."""
    for site in SITES:
        copy = (plain_stack.flows.profiles / f"{site}.toml").read_text()
        shipped = (REPO_ROOT / "crawlers" / "profiles" / f"{site}.toml").read_text()
        assert len(copy.splitlines()) == len(shipped.splitlines())
        pairs = zip(copy.splitlines(), shipped.splitlines(), strict=True)
        assert [a for a, b in pairs if a != b] == [f'base_url = "{plain_stack.urls[site]}"']
        assert (plain_stack.flows.sites / site / "baseline.json").is_file()
