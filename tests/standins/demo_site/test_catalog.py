"""The demo catalog: deterministic, large enough, and revisions that say what changed."""

from __future__ import annotations

import itertools
import re
from dataclasses import asdict, replace

import pytest

from standins.demo_site.catalog import AVAILABILITIES, STOCK_CHANGE_SHARE, Catalog, build_catalog

# In-process, but seconds of CPU (whole demo catalogs built): the integration tier keeps
# `make test-fast` within its budget.
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return build_catalog()


def test_same_inputs_give_the_same_catalog(catalog: Catalog) -> None:
    # Built afresh (build_catalog caches its results): equal, not merely the same object.
    fresh = build_catalog.__wrapped__
    assert fresh(7, 1200) == catalog and fresh(7, 1200) is not catalog
    assert fresh(7, 1200, revision=2) == fresh(7, 1200, revision=2)
    other = build_catalog(8, 1200)
    assert [p.name for p in other.products] != [p.name for p in catalog.products]


def test_catalog_size_and_categories(catalog: Catalog) -> None:
    assert len(catalog.products) == 1200
    assert 10 <= len(catalog.categories) <= 12
    sizes = [len(catalog.by_category[c.slug]) for c in catalog.categories]
    assert sum(sizes) == 1200 and min(sizes) >= 50
    assert len(build_catalog(3, 50).products) == 50


def test_every_product_is_complete_and_well_formed(catalog: Catalog) -> None:
    names = {c.slug: c.name for c in catalog.categories}
    for product in catalog.products:
        assert re.fullmatch(r"DM-\d{5}", product.sku)
        assert product.url == f"/product/{product.sku}"
        assert product.image == f"/images/{product.sku}.svg"
        assert product.category == names[product.category_slug]
        assert product.price > 0 and round(product.price, 2) == product.price
        assert product.currency == "EUR"
        assert product.availability in AVAILABILITIES
        assert 1.0 <= product.rating <= 5.0 and round(product.rating, 1) == product.rating
        assert product.review_count == len(product.reviews) <= 8
        sentences = re.findall(r"[.!?](?:\s|$)", product.description)
        assert 2 <= len(sentences) <= 4, product.description
        for review in product.reviews:
            assert review.author and review.title and review.body
            assert 1 <= review.rating <= 5
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", review.date)
        if product.reviews:
            mean = sum(r.rating for r in product.reviews) / len(product.reviews)
            assert product.rating == round(mean, 1)
    assert {p.review_count for p in catalog.products} >= {0, 8}
    assert {p.availability for p in catalog.products} == set(AVAILABILITIES)


def test_skus_and_names_are_unique(catalog: Catalog) -> None:
    assert len({p.sku for p in catalog.products}) == len(catalog.products)
    assert len({p.name for p in catalog.products}) == len(catalog.products)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def test_descriptions_are_distinctive(catalog: Catalog) -> None:
    assert len({p.description for p in catalog.products}) == len(catalog.products)
    for product in catalog.products:
        traits = catalog.traits[product.sku]
        # The text carries what a paraphrased query would ask for.
        for phrase in (traits.product_type, traits.material, traits.use_case, *traits.features):
            assert phrase in product.description, (phrase, product.description)
        assert "lorem" not in product.description.lower()
    # Within a category, no two descriptions share most of their words (brand and model
    # names aside, which would make the check too easy).
    for products in catalog.by_category.values():
        words = {p.sku: _words(p.description) - _words(p.name) for p in products}
        for a, b in itertools.combinations(products, 2):
            overlap = len(words[a.sku] & words[b.sku]) / len(words[a.sku] | words[b.sku])
            assert overlap < 0.8, (a.description, b.description)


def test_revision_changes_and_adds_exactly_the_announced_skus(catalog: Catalog) -> None:
    revised = catalog.revised(1)
    assert revised == build_catalog(7, 1200, revision=1)
    assert len(revised.changed_skus) == round(0.05 * 1200)
    assert len(revised.added_skus) == round(0.02 * 1200)
    before, after = catalog.by_sku, revised.by_sku
    assert set(after) - set(before) == revised.added_skus
    assert set(before) <= set(after)
    for sku, old in before.items():
        new = after[sku]
        if sku in revised.changed_skus:
            assert new != old
            # Only the price and/or the description move, and some go out of stock or
            # come back.
            unmoved = replace(
                new, price=old.price, description=old.description, availability=old.availability
            )
            assert unmoved == old
            assert revised.lastmod[sku] > catalog.lastmod[sku]
        else:
            assert new == old
            assert revised.lastmod[sku] == catalog.lastmod[sku]
    for sku in revised.added_skus:
        assert asdict(after[sku])["sku"] == sku and after[sku].description


def test_revisions_chain_and_honour_custom_fractions(catalog: Catalog) -> None:
    first, second = catalog.revised(1), catalog.revised(1).revised(2)
    assert second == build_catalog(7, 1200, revision=2)
    assert len(second.products) == len(first.products) + round(0.02 * len(first.products))
    assert second.changed_skus != first.changed_skus
    custom = catalog.revised(1, change_fraction=0.1, add_fraction=0.0)
    assert len(custom.changed_skus) == 120 and not custom.added_skus
    assert catalog.revised(1) == catalog.revised(1)  # revising is pure, too


def test_revisions_move_stock_from_their_own_random_stream(catalog: Catalog) -> None:
    revised = catalog.revised(1)
    moved = {
        sku: (catalog.by_sku[sku].availability, revised.by_sku[sku].availability)
        for sku in revised.changed_skus
        if revised.by_sku[sku].availability != catalog.by_sku[sku].availability
    }
    # About STOCK_CHANGE_SHARE of the changed products, only ever in <-> out of stock.
    assert abs(len(moved) - STOCK_CHANGE_SHARE * len(revised.changed_skus)) <= 10
    assert {after for before, after in moved.values()} == {"InStock", "OutOfStock"}
    assert all(after == "OutOfStock" for before, after in moved.values() if before == "InStock")
    # The products and prices the revision picks are those it picked before stock moved
    # (the first ones of revision 1, as they were).
    first = sorted(revised.changed_skus)[:3]
    assert first == ["DM-00010", "DM-00015", "DM-00041"]
    assert [revised.by_sku[sku].price for sku in first] == [17.99, 25.99, 25.95]
