"""Finders for who and when: an author (a byline "By Jane Doe", ``rel=author``,
``itemprop=author``, a ``<cite>``, an element named so), a company or agency (a link to
its page), dates (``<time datetime>``, ``itemprop=datePublished``, a date-like text near
the byline), a card's own text (the longest), its tags (links to tag pages, or under
a "Tags" label) and lists under a heading ("Key features", "Skills"). Pure functions."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from crawlers.scaffold.candidates import css_candidates, exact_path
from crawlers.scaffold.finders import Hit, Site, unquoted
from crawlers.scaffold.labels import field_for, headed
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
from crawlers.spiders.printed import printed_date

__all__ = [
    "find_author",
    "find_dated",
    "find_linked",
    "find_list_under",
    "find_tags",
    "find_text",
]

_BY = re.compile(r"^(by|por|di|da|par|von|de|door|av|af)\s+(\S.{1,60})$", re.I)
_AUTHOR_WORDS = {"author", "byline", "writer", "autor", "autore", "auteur", "verfasser", "cite",
                 "reviewer", "consumer", "username", "nickname", "poster"}  # fmt: skip
_DATE_WORDS = {"date", "time", "posted", "published", "dateline", "fecha", "data", "datum",
               "timestamp", "meta", "pubdate", "datepublished"}  # fmt: skip
_TAG_WORDS = {"tag", "tags", "topics", "topic", "keywords", "labels", "etiquetas", "categories"}
# Words of a link's URL naming what it leads to (a company's page, an author's...).
URL_WORDS = {
    "company": ("company", "companies", "employer", "employers", "empresa", "empresas",
                "azienda", "aziende", "entreprise", "unternehmen", "firma", "organization"),
    "author": ("author", "authors", "autor", "autore", "auteur", "writer", "journalist",
               "users", "user", "profile", "member", "reviewer"),
    "agency": ("agent", "agents", "agency", "agencia", "agenzia", "agence", "makler"),
    "brand": ("brand", "brands", "marca", "marque", "marke", "manufacturer"),
}  # fmt: skip


def find_author(unit: Unit, site: Site) -> Hit | None:
    """Who wrote it: ``rel=author`` or ``itemprop=author``, an element named for authors
    (``small.author``, ``span.byline``), a byline's name ("By Jane Doe"), a ``cite``."""
    root = unit.root
    for query in (".//*[@rel='author']", ".//*[@itemprop='author']"):
        for element in root.xpath(query):
            name = (element.xpath("self::*[@content] | .//*[@itemprop='name']") or [element])[0]
            attr = "content" if name.root.tag == "meta" or name.attrib.get("content") else None
            words = name.attrib.get("content", "") if attr else text_of(name)
            if 2 <= len(words) <= 60 and not in_other_card(element, unit):
                exact, general = rules_for(name, unit, {"attr": attr} if attr else None)
                return Hit(exact, general, name)
    found = elements(unit)
    for element in found:
        words = text_of(element)
        named = hints(element) & _AUTHOR_WORDS and 2 <= len(words) <= 60 and not _BY.match(words)
        if named and not in_chrome(element) and not in_other_card(element, unit):
            exact, general = rules_for(element, unit)
            return Hit(exact, general, element)
    for element in found:
        words = text_of(element)
        match = _BY.match(words)
        if not match or in_chrome(element) or in_other_card(element, unit):
            continue
        rest = match.group(2).strip()
        inner = [e for e in element.xpath("./*") if text_of(e) and rest.startswith(text_of(e))]
        if inner:
            exact, general = rules_for(inner[0], unit)
            return Hit(exact, general, inner[0])
        shaping = {"re": rf"(?i)^\s*{re.escape(match.group(1))}\s+(.+?)\s*$"}
        exact, general = rules_for(element, unit, shaping)
        return Hit(exact, general, element)
    for element in root.xpath(".//cite"):
        if 2 <= len(text_of(element)) <= 60 and not in_other_card(element, unit):
            exact, general = rules_for(element, unit)
            return Hit(exact, general, element)
    return None


def find_linked(unit: Unit, site: Site, what: str, name: Any | None) -> Hit | None:
    """A link to the page of the item's company (agency, brand, author), by the words of
    its URL (``/company/acme``, ``/empresa/acme``), nearest the item's name."""
    words = URL_WORDS[what]
    found = []
    for link in unit.root.xpath(".//a[@href]"):
        href = link.attrib["href"].lower()
        parts = set(re.split(r"[/?=&.#_-]+", href))
        named = parts & set(words) and 2 <= len(text_of(link)) <= 80
        if named and not in_chrome(link) and not in_other_card(link, unit):
            found.append(link)
    if not found:
        return None
    if name is not None and unit.is_page:
        order = unit.page.order
        at = order.get(name.root, 0)
        found.sort(key=lambda e: abs(order.get(e.root, 0) - at))
    link = found[0]
    exact, general = rules_for(link, unit)
    word = next(w for w in words if w in link.attrib["href"].lower())
    scope = "//" if unit.is_page else ".//"
    return Hit(exact, [*general, {"xpath": f"{scope}a[contains(@href, '/{word}')]"}])


def find_dated(unit: Unit, site: Site, which: str) -> Hit | None:
    """A date: ``itemprop=datePublished``/``dateModified``, a ``<time datetime>``, or a
    short date-like text in an element named for dates (``span.date``)."""
    prop = "dateModified" if which == "updated" else "datePublished"
    for element in unit.root.xpath(f".//*[@itemprop='{prop}']"):
        attr = next((a for a in ("datetime", "content") if element.attrib.get(a)), None)
        exact, general = rules_for(element, unit, {"attr": attr} if attr else None)
        return Hit(exact, general)
    if which == "updated":
        return None
    for element in unit.root.xpath(".//time[@datetime]"):
        if not in_other_card(element, unit):
            exact, general = rules_for(element, unit, {"attr": "datetime"})
            return Hit(exact, general)
    if unit.is_page:
        meta = unit.root.xpath("//meta[@property='article:published_time']/@content").get()
        if meta:
            rule = {"xpath": "//meta[@property='article:published_time']/@content"}
            return Hit(rule, [rule])
    for element in elements(unit):
        words = text_of(element)
        if not (6 <= len(words) <= 40) or not re.search(r"\d", words):
            continue
        if not hints(element) & _DATE_WORDS or in_other_card(element, unit):
            continue
        shaping = {"re": r"(?i)^(?:\D{0,25}?\b(?:on|el|il|le|am|em)\s)?\s*(.+?)\s*$"}
        cut = re.sub(r"^\D*?(\d)", r"\1", words)
        if printed_date(words, site.languages) or printed_date(cut, site.languages):
            exact, general = rules_for(element, unit)
            return Hit(exact, general + [r | shaping for r in general[:3]])
    return None


def text_slot(units: Sequence[Unit]) -> str | None:
    """Where the cards of a list keep their own text: the place (tags and classes from the
    card down) whose texts are the longest over the cards, present on most of them; a
    card whose longest text is elsewhere (a business's long reply) does not decide."""
    lengths: dict[str, list[int]] = {}
    for unit in units:
        seen: dict[str, int] = {}
        for element in _texts(unit):
            key = _slot(element, unit)
            seen[key] = max(seen.get(key, 0), len(text_of(element)))
        for key, n in seen.items():
            lengths.setdefault(key, []).append(n)
    common = {k: v for k, v in lengths.items() if len(v) >= 0.6 * len(units)}
    if not common:
        return None
    return max(common, key=lambda k: sorted(common[k])[len(common[k]) // 2])


def _texts(unit: Unit) -> list[Any]:
    return [
        e
        for e in elements(unit)
        if e.root.tag not in ("a", "button", "script", "style") and len(text_of(e)) >= 20
    ]


def _slot(element: Any, unit: Unit) -> str:
    node, parts = element.root, []
    while node is not None and node is not unit.root.root:
        parts.append(node.tag + "." + ".".join(sorted((node.get("class") or "").split())))
        node = node.getparent()
    return "/".join(reversed(parts))


def find_text(unit: Unit, site: Site) -> Hit | None:
    """A card's own text: in the place the cards keep it (``site.text_slot``), else its
    longest (a quote, a review's body)."""
    found = _texts(unit)
    placed = [e for e in found if site.text_slot and _slot(e, unit) == site.text_slot]
    best = placed[0] if placed else max(found, key=lambda e: len(text_of(e)), default=None)
    if best is None:
        return None
    exact, general = rules_for(best, unit, unquoted(text_of(best)))
    return Hit(exact, general)


def find_tags(unit: Unit, site: Site) -> Hit | None:
    """Tags: links under an element named for tags, or after a "Tags:" label, or links
    whose URLs lead to tag pages."""
    scope = "//" if unit.is_page else ".//"
    links = []
    for element in unit.root.xpath(".//*[@class or @id or @rel]"):
        if hints(element) & _TAG_WORDS or element.attrib.get("rel") == "tag":
            found = element.xpath("self::a | .//a")
            if found and not in_chrome(element) and not in_other_card(element, unit):
                links = found
                holder = element
                break
    if not links:
        for link in unit.root.xpath(".//a[@href]"):
            parts = set(re.split(r"[/?=&.#_-]+", link.attrib["href"].lower()))
            tagged = parts & {"tag", "tags", "topic", "topics", "keyword"}
            if tagged and not in_chrome(link) and not in_other_card(link, unit):
                links.append(link)
        if not links:
            return None
        holder = links[0].xpath("..")[0]
    exact = {"xpath": " | ".join(exact_path(a, unit.root) for a in links), "all": True}
    rules = [{"css": f"{css} a", "all": True} for css in css_candidates(holder, unit.root)[:4]]
    rules += [{"css": css, "all": True} for css in css_candidates(links[0], unit.root)[:3]]
    href = links[0].attrib.get("href", "")
    word = next((w for w in ("tag", "topic", "keyword") if w in href.lower()), None)
    if word:
        rules.append({"xpath": f"{scope}a[contains(@href, '/{word}')]", "all": True})
    return Hit(exact, rules)


def find_list_under(unit: Unit, site: Site, wanted: str) -> Hit | None:
    """A list under a heading naming the field ("Key features", "Skills", "Topics")."""
    for label, after in headed(unit.root, unit.is_page):
        if field_for(label, [wanted]) != wanted:
            continue
        items = after.xpath("./li")
        if not items:
            continue
        exact = {"xpath": " | ".join(exact_path(li, unit.root) for li in items), "all": True}
        heading = after.xpath("preceding-sibling::*[1]")[0]
        rules = [{"css": f"{css} li", "all": True} for css in css_candidates(after, unit.root)[:4]]
        scope = "//" if unit.is_page else ".//"
        if "'" not in label:
            rules.insert(0, {
                "xpath": f"{scope}{heading.root.tag}[normalize-space()='{text_of(heading)}']"
                f"/following-sibling::*[1]/li",
                "all": True,
            })  # fmt: skip
        for path in xpath_of(after)[:2]:
            rules.append({"xpath": f"{path}/li", "all": True})
        return Hit(exact, rules)
    return None


# Words of the class, id or itemprop an element holding the field is often given.
HINTS = {
    "address": {"address", "addr", "street", "streetaddress", "direccion", "dirección",
                "indirizzo", "adresse", "anschrift", "endereco", "endereço"},
    "city": {"location", "city", "town", "locality", "addresslocality", "ciudad", "citta",
             "città", "ville", "ort", "cidade", "joblocation"},
    "company": {"company", "employer", "organization", "organisation", "hiringorganization",
                "empresa", "azienda", "entreprise", "unternehmen", "firma"},
    "brand": {"brand", "manufacturer", "marca", "marque", "marke", "hersteller"},
    "agency": {"agent", "agency", "realtor", "broker", "advertiser", "agencia", "agenzia"},
}  # fmt: skip


def find_hinted(unit: Unit, site: Site, what: str, name: Any | None) -> Hit | None:
    """A short text in an element named for the field (``p.address``,
    ``span[itemprop=addressLocality]``, ``<address>``), nearest the item's name."""
    words = HINTS[what]
    found = []
    for element in elements(unit):
        text = text_of(element)
        named = hints(element) & words or (what == "address" and element.root.tag == "address")
        if not named or not 2 <= len(text) <= 120 or in_chrome(element):
            continue
        if not in_other_card(element, unit) and not element.xpath(".//p|.//li|.//div"):
            found.append(element)
    if not found:
        return None
    if name is not None and unit.is_page:
        order = unit.page.order
        at = order.get(name.root, 0)
        found.sort(key=lambda e: abs(order.get(e.root, 0) - at))
    exact, general = rules_for(found[0], unit)
    return Hit(exact, general, found[0])
