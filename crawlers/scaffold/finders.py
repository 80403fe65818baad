"""Field finders: each a small function that finds one kind of value on a unit (a page, or
a card of a list) the way a reader finds it, and proposes rules that read it.

A finder returns a ``Hit``: the rule reading exactly what it found on this unit (what the
field's value is here) and general rules that may read it on the other units too;
crawlers.scaffold.synth keeps the general rule that does. Finders look at markup as
sites write it, never at one site: headings and ``<title>`` for names, prices printed
next to the name, breadcrumb trails by their names and shape, paragraphs for a
description, galleries for images, bylines for authors, ``<time>`` and date-like text
for dates, availability phrases in six languages."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from crawlers.scaffold.candidates import css_candidates, exact_path
from crawlers.scaffold.labels import label_maps
from crawlers.scaffold.look import (
    elements,
    hints,
    in_chrome,
    in_other_card,
    rules_for,
    text_of,
    xpath_of,
)
from crawlers.scaffold.synth import Unit
from crawlers.spiders.currency import printed_sign

__all__ = [
    "Hit",
    "Site",
    "find_availability",
    "find_description",
    "find_images",
    "find_main_image",
    "find_name",
    "find_operation",
    "find_price",
    "find_summary",
    "map_rule",
    "separators",
]

_MONEY = re.compile(r"^[^\d\n]{0,6}\d[\d.,'\s\u00a0\u202f]*[^\d\n]{0,6}$")
_OLD_PRICE = re.compile(r"old|was|strike|before|regular|list|crossed|compare|rrp|original")
_SEPARATORS = "/>|\u00b7\u203a\u00bb\u2013\u2014:-"
_LOGO = re.compile(r"logo|icon|sprite|pixel|spacer|avatar|badge|flag|rating|star", re.I)


@dataclass
class Hit:
    exact: dict[str, Any]  # reads exactly what was found on this unit
    rules: list[dict[str, Any]] = field(default_factory=list)  # may read it on others
    element: Any = None  # the element found, when one holds the value


@dataclass
class Site:
    """What the finders know of the site as a whole: the common suffix of its titles
    (`` | GearShop``), the texts every unit shows (chrome), the URL patterns of its
    listings (a link to one near a title names the item's category)."""

    title_suffix: str = ""
    constant: frozenset[str] = frozenset()
    listings: tuple[str, ...] = ()
    languages: tuple[str, ...] = ("en",)  # what dates and numbers are read in
    text_slot: str | None = None  # where cards keep their own text (people.text_slot)
    names: dict[str, set[str]] = field(default_factory=dict)  # page URL -> its links' words


def separators() -> str:
    """What sites print between parts of a title or a trail (``|``, ``-``, an angle quote)."""
    return _SEPARATORS


def title_suffix(titles: Sequence[str]) -> str:
    """The ending all titles share, from a separator on (`` - Smith's Rare Books``)."""
    titles = [t for t in titles if t]
    if len(titles) < 2:
        return ""
    reversed_common = ""
    for chars in zip(*(t[::-1] for t in titles), strict=False):
        if len(set(chars)) != 1:
            break
        reversed_common += chars[0]
    common = reversed_common[::-1]
    cut = re.search(r"\s[" + re.escape(_SEPARATORS) + r"]\s.*$", common)
    return cut.group(0) if cut else ""


# -- names -------------------------------------------------------------------------------------


def find_name(unit: Unit, site: Site) -> Hit | None:
    """A page's name: its ``<h1>``; else ``itemprop=name``; else the large or bold text
    that the ``<title>`` starts with; else the title without the site's suffix. A card's:
    its heading, else its main link's words, else its bold text."""
    root = unit.root
    if not unit.is_page:
        # The card's own name in its microdata (not its author's, in a nested item).
        own_name = (
            ".//*[@itemprop='name' or @itemprop='headline'][not(ancestor::*[@itemprop='author'])]"
        )
        for element in root.xpath(own_name):
            attr = "content" if element.attrib.get("content") else None
            words = element.attrib.get("content", "") if attr else text_of(element)
            if len(words) >= 2:
                shaping = ({"attr": attr} if attr else {}) | unquoted(words)
                exact, general = rules_for(element, unit, shaping)
                return Hit(exact, general, element)
        for query in (".//*[self::h1 or self::h2 or self::h3 or self::h4 or self::h5]",
                      ".//a[normalize-space()]", ".//*[self::strong or self::b]"):  # fmt: skip
            for element in root.xpath(query):
                if len(text_of(element)) >= 2:
                    exact, general = rules_for(element, unit, unquoted(text_of(element)))
                    return Hit(exact, general, element)
        return None
    for element in root.xpath("//h1"):
        if text_of(element) and not in_chrome(element) and text_of(element) not in site.constant:
            exact, general = rules_for(element, unit)
            return Hit(exact, [*general, {"data": "og:title"}, _title_rule(site)], element)
    for element in root.xpath("//*[@itemprop='name']"):
        if text_of(element) and not in_other_card(element, unit):
            exact, general = rules_for(element, unit)
            return Hit(exact, general, element)
    if named := _named_by_links(unit, site):
        exact, general = rules_for(named, unit)
        return Hit(exact, general, named)
    title = " ".join(" ".join(root.xpath("//title//text()").getall()).split())
    stem = title.removesuffix(site.title_suffix).strip() if site.title_suffix else title
    best = None
    for element in root.xpath("//body//*[self::font or self::b or self::strong or self::h2]"):
        words = text_of(element)
        fits = len(words) >= 3 and stem.startswith(words) and not in_chrome(element)
        if fits and (best is None or len(words) > len(text_of(best))):
            best = element
    if best is not None:
        exact, general = rules_for(best, unit)
        return Hit(exact, general, best)
    if site.title_suffix and stem:
        rule = _title_rule(site)
        return Hit(rule, [rule, {"data": "og:title"}])
    return None


# Quotation marks around a text (a review's title, a quote), in the languages' styles.
OPENING = "\u201c\"'\u00ab\u201e\u2018"
CLOSING = "\u201d\"'\u00bb\u201c\u2019"


def unquoted(text: str) -> dict[str, Any]:
    """Shaping that leaves out the quotation marks around ``text``, if it has some."""
    if len(text) > 2 and text[0] in OPENING and text[-1] in CLOSING:
        return {"re": rf"^\W*?[{OPENING}](.*)[{CLOSING}]\W*$"}
    return {}


def _named_by_links(unit: Unit, site: Site) -> Any | None:
    """The heading-like element whose words the listings' links to this page read (a
    card's "Lenovo ThinkPad..." over an ``<h4>`` reading the same)."""
    said = {
        re.sub(r"(\.\.\.|…)$", "", name).strip().casefold()
        for name in site.names.get(unit.page.url, ())
    }
    said = {name for name in said if len(name) >= 3}
    if not said:
        return None
    for element in unit.root.xpath(
        "//body//*[self::h2 or self::h3 or self::h4 or self::h5 or self::strong or self::b "
        "or self::span or self::div or self::p or self::a][text()[normalize-space()]]"
    ):
        words = text_of(element).casefold()
        if len(words) > 200 or in_chrome(element) or in_other_card(element, unit):
            continue
        if any(words == name or (len(name) > 12 and words.startswith(name)) for name in said):
            return element
    return None


def _title_rule(site: Site) -> dict[str, Any]:
    if not site.title_suffix:
        return {"css": "title"}
    return {"css": "title", "re": rf"^\s*(.+?)\s*{re.escape(site.title_suffix.strip())}\s*$"}


# -- prices ------------------------------------------------------------------------------------


def money_elements(unit: Unit) -> list[Any]:
    """Elements printing one amount with a currency sign (``$1,299.00``, ``1.234,56 €``),
    not struck out, not in the chrome or another item's card."""
    out = []
    # Elements with digits of their own, and the two around them: a sign and an amount
    # in elements of their own (<span>€</span><span>29,99</span>) are read together.
    seen: dict[Any, Any] = {}
    for element in elements(unit):
        if any(c.isdigit() for c in element.root.text or ""):
            seen.setdefault(element.root, element)
            for parent in element.xpath("ancestor::*[position() <= 2]"):
                seen.setdefault(parent.root, parent)
    for element in sorted(seen.values(), key=lambda e: unit.page.order.get(e.root, 0)):
        tag = element.root.tag
        if tag in ("script", "style", "option", "title", "del", "s", "strike"):
            continue
        words = text_of(element)
        if len(words) > 24 or not _MONEY.match(words) or printed_sign(words) is None:
            continue
        if element.xpath("ancestor::del|ancestor::s|ancestor::strike"):
            continue
        if any(_OLD_PRICE.search(w) for w in hints(element)) or in_chrome(element):
            continue
        if in_other_card(element, unit):
            continue
        out.append(element)
    return out


def find_price(unit: Unit, site: Site, name: Any | None) -> Hit | None:
    """The amount printed nearest after the item's name (on a card: its first one)."""
    found = money_elements(unit)
    if not found:
        return None
    if name is not None and unit.is_page:
        order = unit.page.order
        at = order.get(name.root, 0)
        found.sort(key=lambda e: (order.get(e.root, 0) < at, abs(order.get(e.root, 0) - at)))
    element = found[0]
    exact, general = rules_for(element, unit)
    return Hit(exact, general, element)


# -- availability and codes --------------------------------------------------------------------


def map_rule(
    map_name: str, languages: tuple[str, ...] | None = None, anywhere: bool = False
) -> dict[str, Any]:
    """Shaping reading a phrase of ``map_name`` (``labels.toml`` [maps], English and the
    site's ``languages``) at the start of a text (or ``anywhere`` in it), and storing its
    value: ``re`` over the phrases, longest first, and ``map``."""
    table = label_maps(languages)[map_name]
    chosen = sorted(table, key=lambda p: (-len(p), p))
    alternation = "|".join(re.escape(p).replace("\\ ", " ") for p in chosen)
    start = r"(?<!\w)" if anywhere else r"^\W*"
    return {"re": rf"(?i){start}({alternation})(?!\w)", "map": {p: table[p] for p in chosen}}


def find_availability(unit: Unit, site: Site) -> Hit | None:
    """A short text saying whether it can be bought ("In stock (19 available)",
    "Esaurito"), or an ``itemprop=availability`` link or meta."""
    table = label_maps(site.languages)["availability"]
    for element in unit.root.xpath(".//*[@itemprop='availability']"):
        value = element.attrib.get("href") or element.attrib.get("content")
        if value:
            attr = "href" if element.attrib.get("href") else "content"
            exact, general = rules_for(element, unit, {"attr": attr})
            return Hit(exact, general)
    for element in elements(unit):
        words = text_of(element).casefold()
        if len(words) > 40 or element.root.tag in ("option", "script", "button", "a"):
            continue
        phrase = next(
            (p for p in sorted(table, key=len, reverse=True) if words.startswith(p)), None
        )
        if phrase is None or in_chrome(element) or in_other_card(element, unit):
            continue
        if re.match(rf"{re.escape(phrase)}\w", words):
            continue
        shaping = map_rule("availability", site.languages)
        exact, general = rules_for(element, unit, shaping)
        return Hit(exact, general)
    return None


def find_operation(unit: Unit, site: Site, name: Any | None) -> Hit | None:
    """Sale or rent, as the title says it ("3 bedroom flat for sale")."""
    if name is None:
        return None
    words = text_of(name).casefold()
    table = label_maps(site.languages)["operation"]
    found = [p for p in table if re.search(rf"(?<!\w){re.escape(p)}(?!\w)", words)]
    if not found:
        return None
    shaping = map_rule("operation", site.languages, anywhere=True)
    exact, general = rules_for(name, unit, shaping)
    return Hit(exact, general)


# -- texts and images --------------------------------------------------------------------------


def paragraph_blocks(unit: Unit) -> list[tuple[Any, list[Any]]]:
    """(parent, its paragraphs) of the unit's main text, longest first."""
    blocks = []
    for parent in unit.root.xpath(".//*[p]"):
        paras = [p for p in parent.xpath("./p") if len(text_of(p)) >= 20]
        if not paras or in_chrome(parent) or in_other_card(parent, unit):
            continue
        blocks.append((parent, paras))
    blocks.sort(key=lambda b: -sum(len(text_of(p)) for p in b[1]))
    return blocks


def find_description(unit: Unit, site: Site) -> Hit | None:
    """The longest run of paragraphs (a description, an article's body)."""
    blocks = paragraph_blocks(unit)
    if not blocks or sum(len(text_of(p)) for p in blocks[0][1]) < 60:
        return None
    parent, paras = blocks[0]
    exact = {"xpath": " | ".join(exact_path(p, unit.root) for p in paras), "all": True}
    rules = []
    for css in css_candidates(parent, unit.root)[:5]:
        rules += [{"css": f"{css} > p", "all": True}, {"css": f"{css} p", "all": True}]
    heading = paras[0].xpath("preceding-sibling::*[1]")
    if heading:
        for path in xpath_of(heading[0]) + _heading_paths(heading[0]):
            rules.append({"xpath": f"{path}/following-sibling::p", "all": True})
    return Hit(exact, rules)


def _heading_paths(heading: Any) -> list[str]:
    words = text_of(heading)
    if not words or "'" in words or len(words) > 40:
        return []
    return [f"//{heading.root.tag}[normalize-space()='{words}']"]


def find_summary(unit: Unit, site: Site, name: Any | None) -> Hit | None:
    """An article's standfirst: the short text right under its title."""
    if name is None:
        return None
    for element in name.xpath("following-sibling::*[position() <= 2]"):
        words = text_of(element)
        short = 40 <= len(words) <= 400 and element.root.tag in ("p", "div", "h2", "span")
        byline = re.match(r"^(by|por|di|par|von)\s", words, re.I)
        if short and not byline and not element.xpath(".//a"):
            exact, general = rules_for(element, unit)
            return Hit(exact, [*general, {"xpath": "//meta[@name='description']/@content"}])
    return None


def _images(unit: Unit) -> list[Any]:
    out = []
    for img in unit.root.xpath(".//img[@src or @data-src]"):
        src = img.attrib.get("src") or img.attrib.get("data-src") or ""
        if src.startswith("data:") or _LOGO.search(src + " " + img.attrib.get("class", "")):
            continue
        size = [img.attrib.get(a, "") for a in ("width", "height")]
        if any(s.isdigit() and int(s) < 60 for s in size) or in_chrome(img):
            continue
        if in_other_card(img, unit):
            continue
        out.append(img)
    return out


def find_images(unit: Unit, site: Site, name: Any | None) -> Hit | None:
    """The item's pictures: the images of its gallery (the image group nearest its name)."""
    images = _images(unit)
    if not images:
        return None
    groups: dict[Any, list[Any]] = {}
    for img in images:
        groups.setdefault(img.xpath("..")[0].root, []).append(img)
    order = unit.page.order
    at = order.get(name.root, 0) if name is not None else 0
    parent = min(groups, key=lambda p: abs(order.get(p, 0) - at))
    chosen = groups[parent]
    attr = "src" if chosen[0].attrib.get("src") else "data-src"
    exact: dict[str, Any] = {
        "xpath": " | ".join(exact_path(i, unit.root) for i in chosen),
        "attr": attr,
    }
    exact["all"] = True
    holder = chosen[0].xpath("..")[0]
    rules = [
        {"css": f"{css} img", "attr": attr, "all": True}
        for css in css_candidates(holder, unit.root)[:5]
    ]
    rules += [
        {"css": f"{css} > img", "attr": attr, "all": True}
        for css in css_candidates(holder, unit.root)[:3]
    ]
    return Hit(exact, rules)


def find_main_image(unit: Unit, site: Site, name: Any | None) -> Hit | None:
    """The item's one picture: the first of its gallery (a figure's image first)."""
    images = _images(unit)
    if not images:
        return None
    figures = [i for i in images if i.xpath("ancestor::figure")]
    element = (figures or images)[0]
    attr = "src" if element.attrib.get("src") else "data-src"
    exact, general = rules_for(element, unit, {"attr": attr})
    return Hit(exact, [*general, {"css": "figure img", "attr": attr}, {"data": "og:image"}])
