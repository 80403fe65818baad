"""Rows naming their fields (crawlers/scaffold/rows.py)."""

from __future__ import annotations

from parsel import Selector

from crawlers.scaffold.classify import Page
from crawlers.scaffold.rows import choice_css, label_field
from tests.crawlers.scaffold.support import BASE


def test_a_table_row_labelled_in_another_language_names_its_field() -> None:
    assert label_field("Marke", ["brand", "color"]) == "brand"
    assert label_field("Couleur", ["color"]) == "color"
    assert label_field("Experience level", ["experience_level"]) == "experience_level"
    assert label_field("Marke", ["color"]) is None  # only the fields asked for
    assert label_field("Lieferzeit", ["brand", "color"]) is None


def test_the_choice_list_a_product_is_sold_in_is_its_variants() -> None:
    def page(n: int, options: list[str]) -> Page:
        # A country picker in the footer: the same on every page, layout.
        country = "<select name='land'><option>DE</option><option>AT</option></select>"
        chosen = "".join(f"<option value='v{k}'>{o}</option>" for k, o in enumerate(options))
        variants = (
            f"<select name='variante'><option value=''>Bitte wählen</option>{chosen}</select>"
        )
        return Page(
            f"{BASE}/p/{n}", html=f"<html><body><h1>P{n}</h1>{variants}{country}</body></html>"
        )

    pages = [page(1, ["18 V", "Set"]), page(2, ["Solo"]), page(3, ["18 V", "Set"])]
    # The prompt (an empty value) is no variant: the rule leaves it out.
    assert choice_css(pages) == ('select[name="variante"] option:not([value=""])', 3)
    assert Selector(text=pages[1].html).css(choice_css(pages)[0] + "::text").getall() == ["Solo"]
    assert choice_css([page(1, ["Solo"]), page(2, ["Solo"])]) is None  # never varies
    assert choice_css([Page(f"{BASE}/p/1", html="<html><body><h1>P</h1></body></html>")]) is None
