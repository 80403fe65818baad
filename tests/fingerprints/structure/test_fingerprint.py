"""The fingerprint itself: robust to content, sensitive to structure (no services)."""

from __future__ import annotations

import pytest
from parsel import Selector

from fingerprints.structure.comparison import PageTypeBaseline, compare
from fingerprints.structure.fingerprint import fingerprint, normalize_token, skeleton_shingles
from standins.demo_site import pages
from standins.demo_site.catalog import Catalog, build_catalog

BASE = "http://127.0.0.1:8000"
LISTING_SELECTORS = {"product_links": "a.product-link", "next_page": 'a[rel="next"]'}
PRODUCT_SELECTORS = {"title": "h1.product-title", "reviews_api": "[data-reviews-url]"}
JSONLD_PRODUCT = """//script[@type="application/ld+json"][contains(., '"Product"')]"""


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return build_catalog()


@pytest.fixture(scope="module")
def listing_baseline(catalog: Catalog) -> PageTypeBaseline:
    html = [pages.listing(catalog, "kitchen", n, "v1", BASE) for n in (1, 3, 5)]
    prints = [fingerprint(h or "", LISTING_SELECTORS) for h in html]
    return PageTypeBaseline.build("listing", prints, LISTING_SELECTORS)


@pytest.fixture(scope="module")
def product_baseline(catalog: Catalog) -> PageTypeBaseline:
    html = [pages.product_page(catalog, p.sku, "v1", BASE) for p in catalog.products[:3]]
    prints = [fingerprint(h or "", PRODUCT_SELECTORS) for h in html]
    return PageTypeBaseline.build("product", prints, PRODUCT_SELECTORS)


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("product-card", "product-card"),
        ("tile__title", "tile__title"),  # BEM element: kept
        ("styles_reviewCard__hcAvl", "styles_reviewCard"),  # CSS module hash: stripped
        ("link_wrapper__ahpyq", "link_wrapper"),
        ("review-8f3a2c", None),  # content-driven id
        ("x1n2onr6", None),  # atomic CSS
        ("css-1q2w3e", None),
        ("sc-bdVaJa", None),
        ("resultsPSbdRIQD", None),
        ("col-md-6", None),
    ],
)
def test_token_normalization(token: str, expected: str | None) -> None:
    assert normalize_token(token) == expected


def test_repeated_siblings_and_text_do_not_matter() -> None:
    def page(cards: int, text: str) -> str:
        items = "".join(
            f'<li class="card" id="p-{i}"><a href="/p/{i}">{text}</a></li>' for i in range(cards)
        )
        return f'<html><body><ul class="grid">{items}</ul></body></html>'

    a = fingerprint(page(24, "Blue kettle"))
    b = fingerprint(page(4, "Something else entirely, <b>longer</b>"))
    assert a.skeleton == b.skeleton
    assert "ul > li.card" in a.skeleton
    assert not any("#p-" in token for token in a.skeleton)  # content-driven ids dropped


def test_same_layout_other_content_matches(
    catalog: Catalog, listing_baseline: PageTypeBaseline, product_baseline: PageTypeBaseline
) -> None:
    for category in catalog.categories:
        for number in (1, 2, 5):  # 5 is the last, partial page (4 of 24 cards)
            html = pages.listing(catalog, category.slug, number, "v1", BASE) or ""
            result = compare(fingerprint(html, LISTING_SELECTORS), listing_baseline)
            assert result.passed(0.85), (category.slug, number, result.describe())
    for product in catalog.products[::97]:
        html = pages.product_page(catalog, product.sku, "v1", BASE) or ""
        result = compare(fingerprint(html, PRODUCT_SELECTORS), product_baseline)
        assert result.similarity == pytest.approx(1.0), result.describe()


def test_v2_layout_fails_and_names_what_changed(
    catalog: Catalog, product_baseline: PageTypeBaseline
) -> None:
    html = pages.product_page(catalog, catalog.products[5].sku, "v2", BASE) or ""
    result = compare(fingerprint(html, PRODUCT_SELECTORS), product_baseline)
    assert result.similarity < 0.2
    assert not result.passed(0.85)
    assert set(result.missing_required) == {
        "title ('h1.product-title')",
        "reviews_api ('[data-reviews-url]')",
    }
    assert "jsonld:Product" in result.removed["schema"]
    assert "microdata:Product" in result.removed["schema"]
    assert "state:__STATE__" in result.added["state"]
    assert {"skeleton", "schema", "state", "selectors"} <= set(result.changed_features)


def test_a_single_renamed_class_fails_through_the_selectors(
    catalog: Catalog, listing_baseline: PageTypeBaseline
) -> None:
    """A small change the spider cannot survive: the score stays high, the gate fails."""
    html = pages.listing(catalog, "garden", 2, "v1", BASE) or ""
    renamed = html.replace('class="product-link"', 'class="product-anchor"')
    result = compare(fingerprint(renamed, LISTING_SELECTORS), listing_baseline)
    assert result.scores["skeleton"] > 0.9  # the DOM alone barely changed
    assert result.missing_required == ("product_links ('a.product-link')",)
    assert not result.passed(0.85)
    assert "li > a.product-link" in result.removed["skeleton"]
    assert "li > a.product-anchor" in result.added["skeleton"]


def test_dropped_jsonld_is_a_schema_change(catalog: Catalog) -> None:
    """Microdata still carries the product, so the score alone stays high; a selector on
    the JSON-LD the spider reads first makes its loss fail the page."""
    selectors = {**PRODUCT_SELECTORS, "jsonld_product": JSONLD_PRODUCT}
    html = [pages.product_page(catalog, p.sku, "v1", BASE) or "" for p in catalog.products[:3]]
    baseline = PageTypeBaseline.build(
        "product", [fingerprint(h, selectors) for h in html], selectors
    )
    page = pages.product_page(catalog, catalog.products[9].sku, "v1", BASE) or ""
    start = page.index('<script type="application/ld+json">')
    end = page.index("</script>", start) + len("</script>")
    result = compare(fingerprint(page[:start] + page[end:], selectors), baseline)
    assert "jsonld:Product" in result.removed["schema"]
    assert "jsonld:Product.offers:Offer" in result.removed["schema"]
    assert result.scores["schema"] < 1.0
    assert "schema" in result.changed_features
    assert result.missing_required == (f"jsonld_product ({JSONLD_PRODUCT!r})",)
    assert not result.passed(0.85)


def test_optional_elements_cost_only_their_frequency(listing_baseline: PageTypeBaseline) -> None:
    # "Previous" exists on 2 of the 3 fixture pages (not on page 1): optional, not required.
    assert 0 < listing_baseline.skeleton["nav > a.page-prev"] < 1
    assert listing_baseline.selectors["next_page"].min == 0  # absent on the last page
    assert not listing_baseline.selectors["next_page"].required
    assert listing_baseline.selectors["product_links"].required


def test_deep_documents_do_not_hit_the_recursion_limit() -> None:
    html = "<html><body>" + "<div>" * 3000 + "x" + "</div>" * 3000 + "</body></html>"
    shingles = set(skeleton_shingles(Selector(text=html).root))
    assert "div > div > div > div" in shingles


def test_empty_and_broken_pages_do_not_crash() -> None:
    assert fingerprint(b"").skeleton <= {"html"}
    broken = fingerprint(b"<html><body><div><p>unclosed <table><tr><td>x</body>")
    assert "div > p" in broken.skeleton or "body > div > p" in broken.skeleton
    bad_json = fingerprint(
        b'<html><head><script type="application/ld+json">{not json</script></head></html>'
    )
    assert "jsonld:<unparseable>" in bad_json.schema
