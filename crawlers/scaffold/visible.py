"""Visible elements of scaffolded pages showing a value the pages' structured data
states: the CSS fallback of a structured field, the paragraphs of an HTML description.
Pure functions over sampled pages (``crawlers.scaffold.classify.Page``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urljoin

from parsel import Selector

from crawlers.scaffold.classify import Page
from crawlers.spiders.common import schema_name

__all__ = [
    "CSS_MIN_SHARE",
    "css_fallback",
    "element_text",
    "paragraph_css",
    "same_value",
    "scalar",
    "selector_of",
]

# A CSS fallback must find the structured value on at least this share of the pages.
CSS_MIN_SHARE = 0.6
_SKIPPED_TAGS = {"script", "style", "head", "title", "meta", "link", "noscript", "html", "body"}


def _paragraphs(value: Any) -> list[str]:
    if not isinstance(value, str) or not re.search(r"<p[\s>]", value, re.IGNORECASE):
        return []
    texts = Selector(text=value).xpath("//p").xpath("normalize-space(.)").getall()
    return [text for text in texts if text]


def paragraph_css(samples: Sequence[tuple[Page, list[Any]]]) -> str | None:
    """For an HTML text (``<p>..</p><p>..</p>``): ``<region> p`` whose paragraphs are the
    text's on most pages, so the item keeps its paragraphs (read with ``all = true``)."""
    wanted = [(page, paras) for page, values in samples if (paras := _paragraphs(_first(values)))]
    if not wanted:
        return None
    page, paras = wanted[0]
    regions = []
    for element in page.response.xpath("//body//p"):
        if element.xpath("normalize-space(.)").get() == paras[0]:
            parent = element.xpath("..")[0]
            tag = parent.root.tag if isinstance(parent.root.tag, str) else ""
            classes = (parent.attrib.get("class") or "").split()
            region = selector_of(parent, tag, classes, None) if tag else ""
            if region:
                regions.append(f"{region} p")
    for css in dict.fromkeys(regions):
        hits = sum(
            1
            for other, expected in wanted
            if [element_text(p) for p in other.response.css(css)] == expected
        )
        if hits / len(wanted) >= CSS_MIN_SHARE:
            return css
    return None


def _first(values: Sequence[Any]) -> Any:
    return values[0] if values else None


def scalar(values: Sequence[Any]) -> Any:
    """The first plain value (a nested node counts by its name/value, as the engine reads it)."""
    for value in values:
        if isinstance(value, dict):
            value = value.get("name") or value.get("value") or value.get("@id")
        if isinstance(value, str | int | float | bool) and str(value).strip():
            return value
    return None


def same_value(text: str, value: Any) -> bool:
    text = " ".join(text.split())
    if not text:
        return False
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        try:
            return float(text) == float(value)
        except ValueError:
            return False
    wanted = " ".join(str(value).split())
    if "schema.org/" in wanted:
        wanted = schema_name(wanted) or wanted
    if wanted == text:
        return True
    try:  # "63.00" printed as "63.00" or "63.0": numbers compare as numbers
        return float(wanted) == float(text)
    except ValueError:
        return False


def _candidates(page: Page, value: Any) -> list[tuple[str, str | None]]:
    """CSS (and attribute) of elements of ``page`` showing ``value``: innermost first."""
    found = []
    for element in page.response.xpath("//body//*"):
        tag = element.root.tag if isinstance(element.root.tag, str) else ""
        if not tag or tag in _SKIPPED_TAGS:
            continue
        classes = (element.attrib.get("class") or "").split()
        own = " ".join(element.xpath("normalize-space(.)").getall())
        for name, attr_value in element.attrib.items():
            if name.startswith("data-") or (name == "src" and isinstance(value, str)):
                resolved = urljoin(page.url, attr_value) if name == "src" else attr_value
                if same_value(resolved, value):
                    found.append((selector_of(element, tag, classes, name), name))
        if same_value(own, value):
            found.append((selector_of(element, tag, classes, None), None))
    # The value's own element (the innermost) first, text before attributes.
    found.reverse()
    found.sort(key=lambda hit: hit[1] is not None)
    return [hit for hit in dict.fromkeys(found) if hit[0]]


def selector_of(element: Any, tag: str, classes: list[str], attr: str | None) -> str:
    usable = [c for c in classes if re.fullmatch(r"-?[A-Za-z_][\w-]*", c)]
    if usable:
        css = tag + "".join(f".{c}" for c in usable)
    else:
        parents = element.xpath("ancestor::*[@class][1]")
        if not parents:
            return ""
        parent_classes = [
            c
            for c in (parents[0].attrib.get("class") or "").split()
            if re.fullmatch(r"-?[A-Za-z_][\w-]*", c)
        ]
        if not parent_classes:
            return ""
        css = "." + ".".join(parent_classes) + " " + tag
    return css + (f"[{attr}]" if attr else "")


def css_fallback(samples: Sequence[tuple[Page, list[Any]]]) -> tuple[str, str | None] | None:
    """A selector whose first match shows the page's structured value on at least
    ``CSS_MIN_SHARE`` of the pages having one (and on no page shows another value)."""
    with_value = [(page, scalar(values)) for page, values in samples]
    with_value = [(page, value) for page, value in with_value if value is not None]
    if not with_value:
        return None
    page, value = with_value[0]
    for css, attr in _candidates(page, value):
        hits = 0
        for other, wanted in with_value:
            matched = other.response.css(css)
            if not matched:
                continue
            shown = matched[0].attrib.get(attr, "") if attr else element_text(matched[0])
            if attr == "src":
                shown = urljoin(other.url, shown)
            if not same_value(shown, wanted):
                break
            hits += 1
        else:
            if hits / len(with_value) >= CSS_MIN_SHARE:
                return css, attr
    return None


def element_text(element: Any) -> str:
    return " ".join(part.strip() for part in element.xpath(".//text()").getall() if part.strip())
