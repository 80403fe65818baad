"""Conditional requests on the demo shop: ETag / Last-Modified, 304 (RFC 9110 section 13)."""

from __future__ import annotations

import datetime as dt
import http.client
from email.utils import format_datetime, parsedate_to_datetime
from pathlib import Path

import pytest

from harness.demo_site import DemoSite
from standins.demo_site.catalog import Catalog, build_catalog


@pytest.fixture
def site(demo_site: DemoSite) -> DemoSite:
    return demo_site  # the session's demo shop, reset for each test


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return build_catalog()


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    @property
    def etag(self) -> str | None:
        return self.headers.get("etag")

    @property
    def last_modified(self) -> str | None:
        return self.headers.get("last-modified")


def get(site: DemoSite, path: str, method: str = "GET", **headers: str) -> Answer:
    connection = http.client.HTTPConnection(site.host, site.port, timeout=30)
    try:
        connection.request(
            method, path, headers={k.replace("_", "-"): v for k, v in headers.items()}
        )
        response = connection.getresponse()
        body = response.read()
        return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, body)
    finally:
        connection.close()


def http_date(site: DemoSite, iso_date: str) -> str:
    """The Last-Modified the site gives a page dated ``iso_date`` (never before its
    state's ``changed_at``: other tests may have switched the layout of the shared site)."""
    date = dt.datetime.combine(dt.date.fromisoformat(iso_date), dt.time(), tzinfo=dt.UTC)
    changed_at = site.state()["changed_at"]
    if changed_at is not None:
        date = max(date, dt.datetime.fromisoformat(changed_at))
    return format_datetime(date, usegmt=True)


def test_every_page_carries_validators_and_answers_304(site: DemoSite, catalog: Catalog) -> None:
    sku = catalog.products[3].sku
    paths = [
        "/",
        f"/category/{catalog.categories[0].slug}?page=2",
        f"/product/{sku}",
        f"/api/products/{sku}/reviews",
        f"/images/{sku}.svg",
        "/robots.txt",
        "/sitemap.xml",
        "/sitemaps/products-1.xml",
        "/sitemaps/categories.xml",
        "/cart",
        "/edge/malformed",
    ]
    for path in paths:
        first = get(site, path)
        assert first.status == 200 and first.body, path
        assert first.etag is not None and first.etag.startswith('"'), path  # strong
        assert first.last_modified is not None, path
        again = get(site, path)
        assert (again.etag, again.body) == (first.etag, first.body), path
        not_modified = get(site, path, If_None_Match=first.etag)
        assert (not_modified.status, not_modified.body) == (304, b""), path
        assert not_modified.etag == first.etag, path
        assert not_modified.last_modified == first.last_modified, path


def test_if_none_match_weak_comparison_lists_and_star(site: DemoSite, catalog: Catalog) -> None:
    path = catalog.products[0].url
    etag = get(site, path).etag
    assert etag is not None
    assert get(site, path, If_None_Match=f'"nope", W/{etag}').status == 304
    assert get(site, path, If_None_Match=f'W/"nope" , {etag}').status == 304
    assert get(site, path, If_None_Match="*").status == 304
    assert get(site, path, If_None_Match='"nope"').status == 200
    assert get(site, path, method="HEAD", If_None_Match=etag).status == 304


def test_last_modified_and_if_modified_since(site: DemoSite, catalog: Catalog) -> None:
    product = catalog.products[5]
    first = get(site, product.url)
    assert first.last_modified == http_date(site, catalog.lastmod[product.sku])
    listing = get(site, "/")
    assert listing.last_modified == http_date(site, max(catalog.lastmod.values()))

    assert first.last_modified is not None
    modified = parsedate_to_datetime(first.last_modified)
    later = format_datetime(modified + dt.timedelta(days=1), usegmt=True)
    earlier = format_datetime(modified - dt.timedelta(seconds=1), usegmt=True)
    assert get(site, product.url, If_Modified_Since=first.last_modified).status == 304
    assert get(site, product.url, If_Modified_Since=later).status == 304
    assert get(site, product.url, If_Modified_Since=earlier).status == 200
    assert get(site, product.url, If_Modified_Since="not a date").status == 200
    # If-None-Match takes precedence: a stale tag is a full answer whatever the date says.
    answer = get(site, product.url, If_None_Match='"stale"', If_Modified_Since=later)
    assert answer.status == 200 and answer.body == first.body


@pytest.mark.integration
def test_a_revision_changes_exactly_the_changed_pages(catalog: Catalog, tmp_path: Path) -> None:
    # A site of its own: once a layout changed (as other tests do on the shared site),
    # every later change dates all pages from then, and no page passes by date any more.
    with DemoSite(run_dir=tmp_path, products=len(catalog.products)) as site:
        revision_changes_exactly_the_changed_pages(site, catalog)


def revision_changes_exactly_the_changed_pages(site: DemoSite, catalog: Catalog) -> None:
    revised = catalog.revised(1)
    changed = revised.by_sku[min(revised.changed_skus)]
    unchanged = next(p for p in catalog.products if p.sku not in revised.changed_skus)
    before = {p.url: get(site, p.url) for p in (changed, unchanged)}
    home = get(site, "/")
    assert site.state()["changed_at"] is None
    site.control(revision=1)

    answer = get(site, changed.url, If_None_Match=str(before[changed.url].etag))
    assert answer.status == 200 and answer.etag != before[changed.url].etag
    assert answer.last_modified == http_date(site, revised.lastmod[changed.sku])
    assert (
        get(site, changed.url, If_Modified_Since=str(before[changed.url].last_modified)).status
        == 200
    )
    # A product the revision left alone is byte-identical: still 304, by tag and by date.
    assert get(site, unchanged.url, If_None_Match=str(before[unchanged.url].etag)).status == 304
    assert (
        get(site, unchanged.url, If_Modified_Since=str(before[unchanged.url].last_modified)).status
        == 304
    )
    assert get(site, "/", If_None_Match=str(home.etag)).status == 200  # listing prices moved


def test_a_layout_change_is_a_change(site: DemoSite, catalog: Catalog) -> None:
    path = catalog.products[7].url
    v1 = get(site, path)
    site.control(layout="v2")
    v2 = get(site, path, If_None_Match=str(v1.etag))
    assert v2.status == 200 and v2.etag != v1.etag
    assert get(site, path, If_Modified_Since=str(v1.last_modified)).status == 200
    assert get(site, path, If_None_Match=str(v2.etag)).status == 304


def test_rewritten_and_block_bodies_never_pass_for_the_page(
    site: DemoSite, catalog: Catalog
) -> None:
    path = catalog.products[9].url
    clean = get(site, path)
    site.control(malformed_html={})
    broken = get(site, path, If_None_Match=str(clean.etag))
    assert broken.status == 200 and broken.body != clean.body
    assert broken.etag is not None and broken.etag != clean.etag
    assert broken.last_modified is None  # only its own tag can match the rewritten bytes
    assert get(site, path, If_Modified_Since=str(clean.last_modified)).status == 200
    assert get(site, path, If_None_Match=broken.etag).status == 304  # the same bytes again
    site.control(malformed_html=None)

    site.control(captcha={"attempts": None}, forbidden={"attempts": None, "paths": ["/api/"]})
    captcha = get(
        site, path, If_None_Match=str(clean.etag), If_Modified_Since=str(clean.last_modified)
    )
    assert captcha.status == 200 and b"Verify you are human" in captcha.body
    assert captcha.etag is None and captcha.last_modified is None
    assert get(site, path, If_None_Match="*").status == 200
    reviews = f"/api/products/{catalog.products[9].sku}/reviews"
    site.control(captcha=None)
    assert get(site, reviews, If_None_Match="*").status == 403


def test_the_access_log_counts_status_and_body_bytes(site: DemoSite, catalog: Catalog) -> None:
    path = catalog.products[11].url
    full = get(site, path)
    get(site, path, If_None_Match=str(full.etag))
    get(site, path, method="HEAD")
    get(site, "/product/DM-99999")
    log = site.access_log()
    assert [(e["path"], e["status"], e["conditional"]) for e in log] == [
        (path, 200, False),
        (path, 304, True),
        (path, 200, False),
        ("/product/DM-99999", 404, False),
    ]
    assert log[0]["bytes"] == len(full.body) > 0
    assert log[1]["bytes"] == 0 and log[2]["bytes"] == 0  # 304 and HEAD send no body
    assert log[3]["bytes"] > 0
