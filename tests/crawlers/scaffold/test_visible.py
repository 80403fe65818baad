"""Visible elements showing the structured data's values (crawlers/scaffold/visible.py)."""

from __future__ import annotations

from crawlers.scaffold.classify import Page
from crawlers.scaffold.visible import css_fallback
from tests.crawlers.scaffold.support import BASE


def test_a_css_fallback_must_show_each_pages_own_value() -> None:
    same_title = [
        (
            Page(f"{BASE}/p/{n}", html="<h1 class='t'>Shop</h1><h2 class='n'>" + f"P{n}</h2>"),
            [f"P{n}"],
        )
        for n in range(3)
    ]
    assert css_fallback(same_title) == ("h2.n", None)
    # An element with the first page's value only (a fixed banner) is no fallback.
    fixed = [(Page(f"{BASE}/p/{n}", html="<b class='x'>P0</b>"), [f"P{n}"]) for n in range(3)]
    assert css_fallback(fixed) is None
