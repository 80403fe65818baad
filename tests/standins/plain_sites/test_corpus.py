"""The onboarding corpus: each site renders every page its truth names, showing the
truth's values, pages through its lists, and answers unknown paths with nothing (a 404);
the same seed renders the same site."""

from __future__ import annotations

import html
import re
from urllib.parse import parse_qs, urlsplit

import pytest

from standins.plain_sites.corpus import CORPUS, build

SEED, ITEMS = 7, 30


def render(kind: str, target: str) -> str | None:
    parts = urlsplit(target)
    return build(kind, SEED, ITEMS).render(parts.path, parse_qs(parts.query))


def words(page: str) -> str:
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))
    return " ".join(text.split())


@pytest.mark.parametrize("kind", CORPUS)
def test_every_item_of_the_truth_is_shown(kind: str) -> None:
    built = build(kind, SEED, ITEMS)
    truth = built.truth
    assert len(truth.items) == ITEMS and truth.roles
    for key, fields in truth.items.items():
        if truth.match == "url":
            page = built.render(urlsplit(key).path, parse_qs(urlsplit(key).query))
            assert page is not None, key
            shown = words(page)
            name = fields.get("name") or fields.get("title")
            assert name and str(name) in shown, (key, name)
        else:
            assert fields[truth.match] == key


@pytest.mark.parametrize("kind", CORPUS)
def test_the_home_page_and_unknown_paths(kind: str) -> None:
    assert render(kind, "/") is not None
    assert render(kind, "/no/such/page-404") is None
    assert build(kind, SEED, ITEMS).render("/", {}) == build(kind, SEED, ITEMS).render("/", {})


def test_lists_page_through_and_end() -> None:
    assert render("gearshop", "/c/bikes?page=1") is not None
    assert render("gearshop", "/c/bikes?page=99") is None
    assert render("vacancies", "/jobs?page=2") is not None
    assert render("oldbooks", "/list.php?cat=0&start=0") is not None
    assert render("oldbooks", "/list.php?cat=0&start=7") is None  # not a page's start
    assert render("quotebook", "/page/2/") is not None


def test_values_as_printed() -> None:
    shop = words(render("enoteca", "/vini/rossi") or "")
    assert re.search(r"\d+,\d\d €", shop)  # 1.234,56 € as Italy prints it
    bookshop = render("bookshop", "/") or ""
    assert 'class="star-rating ' in bookshop and "£" in bookshop
    assert "\n<html>\n" in (render("gearshop", "/") or "")  # no <html lang>: words tell
