"""``python -m bench.onboarding`` on small versions of each corpus site: the scaffold
exits 0 unedited, its profile's crawl finds every item the site holds, and the fields it
stores match the site's generator (the bar of the benchmark: no site below 85%); the
measure itself on made-up items."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from bench.onboarding import SITE_BAR, Row, measure, run_site, table, verdict
from bench.onboarding_values import same
from standins.plain_sites.corpus import build
from standins.plain_sites.site import Truth
from tests.corpus_selection import onboarding_sites

SEED, ITEMS, PAGES = 20260415, 48, 40


@pytest.mark.e2e  # a scaffold and a crawl per site, in subprocesses of bench.onboarding
@pytest.mark.parametrize("kind", onboarding_sites(("bookshop", "newsroom", "enoteca")))
def test_a_corpus_site_onboards_unedited(kind: str, tmp_path: Path) -> None:
    row = run_site(kind, SEED, ITEMS, PAGES, tmp_path)
    assert row.exit == 0, row.note
    assert row.found == row.expected == len(build(kind, SEED, ITEMS).truth.items), table([row])
    assert row.accuracy >= SITE_BAR, table([row])
    assert row.roles[0] == row.roles[1], table([row])
    assert row.item_type == build(kind, SEED, ITEMS).truth.item_type


def test_values_compare_as_a_reader_would() -> None:
    assert same(12.5, 12.501, "price") and not same(12.5, 12.52, "price")
    assert same("/img/1.jpg", "http://x.test/img/1.jpg", "images")
    assert same(["/a.jpg"], ["http://x.test/a.jpg"], "images")
    assert same("2024-03-05", "2024-03-05T10:00:00", "published_at")
    assert same("Red  Lamp", "Red Lamp", "name") and not same("Red Lamp", None, "name")
    assert not same(True, 1, "remote") and not same(["a", "b"], ["b", "a"], "tags")


def test_accuracy_is_over_the_items_found_by_their_key() -> None:
    truth = Truth(
        "product",
        "url",
        {"/p/1": {"name": "A", "price": 1.0}, "/p/2": {"name": "B", "price": 2.0}},
        ("detail",),
    )
    items = [
        {"url": "http://x.test/p/1", "name": "A", "price": 1.0},
        {"url": "http://x.test/p/9", "name": "Z", "price": 9.0},
    ]
    assert measure(items, truth) == (1, 1.0, Counter())
    items.append({"url": "http://x.test/p/2", "name": "B", "price": 2.5})
    assert measure(items, truth) == (2, 0.75, Counter({"price": 1}))


def test_the_bar() -> None:
    good = Row("a", 0, (3, 3), 10, 10, 0.99)
    low = Row("b", 0, (3, 3), 10, 10, 0.84)
    assert verdict([good, good])[0] and not verdict([good, low])[0]
    assert not verdict([good, Row("c", 0, (3, 3), 9, 10, 1.0)])[0]
    assert not verdict([good, Row("d", 1, (3, 3), 10, 10, 1.0)])[0]
    assert verdict([good])[1].endswith("MET")
