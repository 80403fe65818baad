"""Rows naming their fields (crawlers/scaffold/rows.py)."""

from __future__ import annotations

from crawlers.scaffold.rows import label_field


def test_a_table_row_labelled_in_another_language_names_its_field() -> None:
    assert label_field("Marke", ["brand", "color"]) == "brand"
    assert label_field("Couleur", ["color"]) == "color"
    assert label_field("Experience level", ["experience_level"]) == "experience_level"
    assert label_field("Marke", ["color"]) is None  # only the fields asked for
    assert label_field("Lieferzeit", ["brand", "color"]) is None
