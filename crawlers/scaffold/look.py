"""How a reader looks at a page: what is chrome (header, navigation, footer, sidebars),
what is a card of another item (related products, most-read lists), an element's words,
the words its class, id or ``itemprop`` use (``price``, ``byline``, ``breadcrumb``), and
rules for an element with a given shaping. Shared by the field finders; pure functions."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from crawlers.scaffold.candidates import css_candidates, exact_path
from crawlers.scaffold.page import Page
from crawlers.scaffold.records import find_records
from crawlers.scaffold.synth import Unit

__all__ = [
    "hints",
    "in_chrome",
    "in_other_card",
    "rules_for",
    "text_of",
    "xpath_of",
]

_CHROME_TAGS = {"header", "footer", "nav", "aside", "form", "button", "select", "noscript"}
_CHROME_WORDS = re.compile(
    r"(^|[-_\s])(header|footer|nav|navbar|navigation|menu|sidebar|cookie|newsletter|"
    r"masthead|topbar|colophon|banner|modal|popup)([-_\s]|$)",
    re.I,
)
_SPLIT = re.compile(r"[-_\s:]+|(?<=[a-z])(?=[A-Z])")


def text_of(element: Any) -> str:
    """The element's words, spaces normalised (scripts and styles left out)."""
    node = element.root
    if isinstance(node, str):
        return " ".join(node.split())
    parts = [node.text or ""]
    for child in node.iterdescendants():
        if (
            isinstance(child.tag, str)
            and child.tag not in ("script", "style")
            and not any(
                a.tag in ("script", "style") for a in child.iterancestors() if a is not node
            )
        ):
            parts.append(child.text or "")
        parts.append(child.tail or "")
    return " ".join(" ".join(parts).split())


def hints(element: Any) -> set[str]:
    """The lower-case words of the element's class, id, itemprop and the names of its
    ``data-*`` attributes (``product-price`` -> {"product", "price"};
    ``data-consumer-name`` -> {"data", "consumer", "name"})."""
    attrib = element.attrib
    raw = " ".join(attrib.get(name, "") for name in ("class", "id", "itemprop", "aria-label"))
    raw += " " + " ".join(name for name in attrib if name.startswith("data-"))
    return {word.lower() for word in _SPLIT.split(raw) if word}


def in_chrome(element: Any) -> bool:
    """Inside the page's header, navigation, footer, a sidebar or a form."""
    return element.root in _chrome(element.root.getroottree().getroot())


def _is_chrome(node: Any) -> bool:
    if node.tag in _CHROME_TAGS:
        return True
    if node.get("role", "") in ("navigation", "banner", "contentinfo", "complementary"):
        return True
    return bool(_CHROME_WORDS.search((node.get("class") or "") + " " + (node.get("id") or "")))


def _in_article(node: Any) -> bool:
    return any(a.tag == "article" for a in node.iterancestors())


_CHROME: dict[int, tuple[Any, frozenset[Any]]] = {}


def _chrome(document: Any) -> frozenset[Any]:
    """Every element of ``document`` inside its chrome (computed once per page)."""
    held = _CHROME.get(id(document))
    if held is not None and held[0] is document:
        return held[1]
    inside: set[Any] = set()
    for node in document.iter():
        # A header, footer or aside inside an <article> is the article's own (its byline,
        # a review's author box), not the site's chrome.
        if isinstance(node.tag, str) and _is_chrome(node) and not _in_article(node):
            inside.update(n for n in node.iter() if isinstance(n.tag, str))
    if len(_CHROME) > 256:
        _CHROME.clear()
    found = frozenset(inside)
    _CHROME[id(document)] = (document, found)
    return found


@lru_cache(maxsize=256)
def _cards(page: Page) -> frozenset[Any]:
    """Every element of the page's lists of other items: repeated blocks whose entries
    mostly link somewhere and hold several texts (a related product's card)."""
    out: set[Any] = set()
    for records in find_records(page):
        linked = sum(bool(links) for links in records.links) / max(1, len(records.elements))
        if records.elements[0].xpath(".//h1") or records.elements[0].root.tag in ("body", "main"):
            continue  # the page's own parts, not cards
        if linked >= 0.6 and records.multi_text >= 0.5:
            for element in records.elements:
                out.update(n for n in element.root.iter() if isinstance(n.tag, str))
    return frozenset(out)


def in_other_card(element: Any, unit: Unit) -> bool:
    """Inside a card of another item (not the unit's own card)."""
    return unit.is_page and element.root in _cards(unit.page)


def elements(unit: Unit) -> list[Any]:
    """The unit's elements with text of their own, in document order (once per unit)."""
    held = _ELEMENTS.get(id(unit))
    if held is not None and held[0] is unit:
        return held[1]
    found = unit.root.xpath(".//*[text()[normalize-space()]]")
    if len(_ELEMENTS) > 512:
        _ELEMENTS.clear()
    _ELEMENTS[id(unit)] = (unit, found)
    return found


_ELEMENTS: dict[int, tuple[Unit, list[Any]]] = {}


def rules_for(
    element: Any, unit: Unit, shaping: Mapping[str, Any] | None = None, limit: int = 10
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the rule reading exactly ``element`` on this unit, general rules for it), each
    with ``shaping`` (``attr``, ``re``, ``map``, ``all``...)."""
    shaping = dict(shaping or {})
    exact = {"xpath": exact_path(element, unit.root)} | shaping
    general = [{"css": css} | shaping for css in css_candidates(element, unit.root)[:limit]]
    # Its place in the template, last: a layout of tables names nothing else.
    return exact, [*general, exact]


def xpath_of(element: Any) -> list[str]:
    """XPaths naming ``element`` on any page by its id, a class or a label attribute."""
    tag = element.root.tag
    attrib = element.attrib
    out = []
    ident = attrib.get("id")
    if ident and not re.search(r"\d{3,}", ident) and "'" not in ident:
        out.append(f"//*[@id='{ident}']")
    for name in ("aria-label", "itemtype", "role"):
        value = attrib.get(name)
        if value and "'" not in value:
            out.append(f"//{tag}[@{name}='{value}']")
    for cls in (attrib.get("class") or "").split()[:3]:
        if re.fullmatch(r"[A-Za-z][\w-]*", cls):
            out.append(f"//{tag}[contains(concat(' ', normalize-space(@class), ' '), ' {cls} ')]")
    return out


def union(paths: Iterable[str]) -> str:
    return " | ".join(paths)
