"""Rows of scaffolded detail pages that name their fields: key/value tables whose key
reads as a field (in the field's name or a market's language, ``field_labels.toml``),
star rows whose filled icons are a rating, and the choice list a product is sold in
(its variants). Pure functions over sampled pages."""

from __future__ import annotations

import functools
import re
import tomllib
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from crawlers.scaffold.classify import Page
from crawlers.scaffold.visible import element_text, selector_of

__all__ = [
    "choice_css",
    "css_of_classes",
    "field_labels",
    "label_field",
    "star_count_css",
    "table_rules",
]


def _label_key(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.casefold()).strip("_")


@functools.cache
def field_labels() -> dict[str, frozenset[str]]:
    """Field -> the labels sites print for it in the markets' languages
    (``field_labels.toml``, kept beside this module as data, not code)."""
    table = tomllib.loads((Path(__file__).with_name("field_labels.toml")).read_text())
    return {name: frozenset(label.casefold() for label in labels) for name, labels in table.items()}


def label_field(label: str, wanted: Iterable[str]) -> str | None:
    """The wanted field a table row's label names: read as the field's name
    (``Experience level`` -> ``experience_level``), else one of its known labels in
    another language (``Marke`` -> ``brand``)."""
    wanted = set(wanted)
    name = _label_key(label)
    if name in wanted:
        return name
    folded = label.casefold().strip()
    return next((f for f in sorted(wanted) if folded in field_labels().get(f, ())), None)


def table_rules(pages: Sequence[Page], fields: Sequence[str]) -> dict[str, tuple[str, str, int]]:
    """Field -> (table CSS, label, pages) for key/value tables (``th``/``td`` rows,
    ``dt``/``dd``) whose key reads as the field's name (``Experience level`` ->
    ``experience_level``) or as one of its labels in another language (``Marke``), on the
    most pages."""
    wanted = set(fields)
    counts: Counter[tuple[str, str, str]] = Counter()
    for page in pages:
        seen: dict[tuple[str, str, str], None] = {}  # in the page's order: a stable profile
        for key in page.response.xpath("//th | //dt | //tr/td[1]"):
            label = " ".join(" ".join(key.xpath(".//text()").getall()).split()).rstrip(":")
            name = label_field(label, wanted)
            if name is None:
                continue
            tables = key.xpath("ancestor::*[self::table or self::dl][1]")
            value = key.xpath("following-sibling::*[self::td or self::dd][1]")
            if not tables or not value or not element_text(value[0]):
                continue
            table = tables[0]
            classes = (table.attrib.get("class") or "").split()
            css = selector_of(table, table.root.tag, classes, None) or table.root.tag
            seen[name, css, label] = None
        counts.update(seen.keys())
    best: dict[str, tuple[str, str, int]] = {}
    for (name, css, label), n in counts.most_common():
        best.setdefault(name, (css, label, n))
    return best


_STAR = re.compile(r"(?:^|[-_])stars?$|^icon-star$")
_STATE = re.compile(r"(?:^|[-_])(filled|full|on|active|checked|selected)$")


def star_count_css(pages: Sequence[Page]) -> tuple[str, int] | None:
    """``<rating element> <tag>.<star class>.<filled class>``: the filled stars of a star
    row, counted (``count = true``), with the number of pages showing some."""
    counts: Counter[str] = Counter()
    for page in pages:
        seen = set()
        for icon in page.response.xpath("//body//*[@class]"):
            classes = (icon.attrib.get("class") or "").split()
            star = next((c for c in classes if _STAR.search(c)), None)
            state = next((c for c in classes if _STATE.search(c)), None)
            if star and state and isinstance(icon.root.tag, str):
                # The star row: the nearest classed ancestor (``span.rating``).
                parents = icon.xpath("ancestor::*[@class][1]")
                row = css_of_classes(parents[0]) if parents else ""
                seen.add(f"{row} {icon.root.tag}.{star}.{state}".strip())
        counts.update(seen)
    if not counts:
        return None
    css, found = counts.most_common(1)[0]
    return css, found


def css_of_classes(element: Any) -> str:
    classes = [
        c
        for c in (element.attrib.get("class") or "").split()
        if re.fullmatch(r"-?[A-Za-z_][\w-]*", c)
    ]
    return element.root.tag + "".join(f".{c}" for c in classes) if classes else ""


def choice_css(pages: Sequence[Page]) -> tuple[str, int] | None:
    """``select[name="..."] option``: the options of the choice list most pages show,
    whose options differ between pages (sizes, colours, sets of each product; a fixed
    list, a country or sort order picker, is layout), with the pages showing it. An
    option with an empty value (``Bitte wählen``) is a prompt: the rule leaves it out."""
    seen: dict[str, list[tuple[str, ...]]] = {}
    prompts: set[str] = set()
    for page in pages:
        for select in page.response.xpath("//body//select"):
            name = select.attrib.get("name") or ""
            css = f'select[name="{name}"]' if re.fullmatch(r"[\w-]+", name) else ""
            css = css or css_of_classes(select)
            if not css:
                continue
            options = tuple(
                element_text(option)
                for option in select.xpath(".//option")
                if option.attrib.get("value", "x") and element_text(option)
            )
            if options:
                seen.setdefault(css, []).append(options)
            if select.xpath(".//option[@value='']"):
                prompts.add(css)
    ranked = sorted(seen.items(), key=lambda kv: -len(kv[1]))
    for css, lists in ranked:
        if len(lists) >= 0.5 * len(pages) and len(set(lists)) > 1:
            option = 'option:not([value=""])' if css in prompts else "option"
            return f"{css} {option}", len(lists)
    return None
