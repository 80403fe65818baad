"""The scaffold's reading of a sample: the page types (crawlers.scaffold.site_map), the
units its items are read from (detail pages, or the cards of a list), the item type by
evidence (crawlers.scaffold.item_types), the market the pages print in, and the field
map (crawlers.scaffold.fields). Pure: sampled pages in, a ``Study`` out."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from crawlers.items import schema_by_type
from crawlers.scaffold import people, rating
from crawlers.scaffold.candidates import css_candidates
from crawlers.scaffold.fields import FieldProposal, propose_fields, survey, url_id_rule
from crawlers.scaffold.finders import (
    Site,
    find_price,
    paragraph_blocks,
    title_suffix,
)
from crawlers.scaffold.item_types import (
    DECLARED,
    Evidence,
    decide,
    declared_fields,
    full_declaration,
    register_declared,
)
from crawlers.scaffold.labelled_fields import labelled_fields
from crawlers.scaffold.labels import field_for, label_words
from crawlers.scaffold.look import text_of
from crawlers.scaffold.market import country_of_host, languages_of
from crawlers.scaffold.page import Page
from crawlers.scaffold.records import find_records
from crawlers.scaffold.site_map import DETAIL, ITEMS, LISTING, PageType, SiteMap, map_site
from crawlers.scaffold.structured import schema_type
from crawlers.scaffold.synth import Choice, Unit
from crawlers.spiders.currency import market
from crawlers.spiders.rules import Reading

__all__ = ["MAX_UNITS", "Study", "study"]

MAX_UNITS = 30  # units the field map is measured on (spread over the sample)
ALL_LABELS = tuple(label_words())


@dataclass
class Study:
    site_map: SiteMap
    page_type: PageType | None  # the page type carrying the items
    units: list[Unit] = field(default_factory=list)
    item_type: str | None = None
    why: str = ""
    schema: str | None = None
    items_css: str | None = None  # cards: the selector of one item each
    fields: dict[str, FieldProposal] = field(default_factory=dict)
    declared: dict[str, dict[str, Any]] = field(default_factory=dict)  # [item_fields]
    languages: tuple[str, ...] = ()
    country: str | None = None
    evidence: Evidence = field(default_factory=Evidence)


def study(pages: Sequence[Page], start_url: str, wanted: str | None = None) -> Study:
    site_map = map_site(pages, start_url)
    page_type = site_map.item_type
    found = Study(site_map, page_type)
    if page_type is None:
        return found
    languages = languages_of(pages)
    country = country_of_host(start_url)
    if languages and not country and "-" in languages[0]:
        country = (
            languages[0].split("-")[-1].upper() if len(languages[0].split("-")[-1]) == 2 else None
        )
    found.languages, found.country = languages, country
    reading = Reading(
        languages, market(country=country, language=languages[0] if languages else None)
    )
    units, found.items_css = _units(page_type)
    found.units = units
    if not units:
        return found
    listings = tuple(r for t in site_map.types.values() if t.role == LISTING for r in t.regexes)
    titles = [" ".join(u.page.response.xpath("//title//text()").getall()).strip() for u in units]
    suffix = title_suffix(titles) if page_type.role == DETAIL else ""
    site = Site(suffix, frozenset(), listings, languages or ("en",), names=site_map.names)
    if page_type.role == ITEMS:
        site.text_slot = people.text_slot(units)
    seen = survey(units, site)
    evidence = _evidence(units, seen, site, page_type)
    found.evidence = evidence
    item_type, found.why = decide(evidence, page_type.role == ITEMS, wanted)
    found.item_type = item_type
    _rename(site_map, page_type, item_type)
    if item_type in DECLARED:
        register_declared(item_type, full_declaration(item_type))
    found.schema = (
        schema_type([u.page for u in units], item_type) if page_type.role == DETAIL else None
    )
    found.fields = propose_fields(item_type, units, reading, site, found.schema, seen)
    if page_type.role == ITEMS:
        _id_from_cards(found, units, item_type)
    else:
        _id_from_url(found, units, item_type)
    extra: dict[str, dict[str, Any]] = {}
    if item_type == "item":  # no known kind: what the site labels, named by its labels
        more, extra = labelled_fields(units, seen, found.fields, reading)
        found.fields |= more
    if item_type in DECLARED:
        found.declared = _declaration(item_type, found.fields, page_type.role == ITEMS) | extra
        register_declared(item_type, found.declared)
    return found


def _rename(site_map: SiteMap, page_type: PageType, item_type: str) -> None:
    """The item pages' type is named after the item type (``product``, ``quote``)."""
    if item_type in site_map.types:
        return
    site_map.types = {
        (item_type if t is page_type else name): t for name, t in site_map.types.items()
    }
    page_type.name = item_type


def _units(page_type: PageType) -> tuple[list[Unit], str | None]:
    pages = _spread(page_type.pages, MAX_UNITS)
    if page_type.role == DETAIL:
        return [Unit(p, p.response.selector) for p in pages], None
    per_page = []
    for page in page_type.pages:
        records = next((r for r in find_records(page) if r.signature == page_type.blocks), None)
        if records is not None:
            per_page.append(records)
    if not per_page:
        return [], None
    css = _records_css(per_page)
    cards = [Unit(r.page, element) for r in per_page for element in r.elements]
    return _spread(cards, 2 * MAX_UNITS), css


def _records_css(per_page: Sequence[Any]) -> str | None:
    """A selector matching exactly the cards on every sampled page of the list."""
    first = per_page[0]
    for css in css_candidates(first.elements[0], first.page.response.selector):
        if all(
            [e.root for e in r.page.response.css(css)] == [e.root for e in r.elements]
            for r in per_page
        ):
            return css
    return None


def _spread(items: Sequence[Any], limit: int) -> list[Any]:
    if len(items) <= limit:
        return list(items)
    step = (len(items) - 1) / (limit - 1)
    return [items[round(i * step)] for i in range(limit)]


def _evidence(
    units: Sequence[Unit], seen: Sequence[dict[str, Any]], site: Site, page_type: PageType
) -> Evidence:
    evidence = Evidence()
    for unit, found in zip(units, seen, strict=True):
        clues: set[str] = set()
        name = found["name"]
        if name is not None:
            clues.add("name")
        for pair in found["labels"]:
            label = field_for(pair.label, ALL_LABELS)
            if label:
                clues.add(f"label:{label}")
        if "label:price" in clues or find_price(unit, site, name.element if name else None):
            clues.add("price")
        if people.find_author(unit, site) is not None or "label:author" in clues:
            clues.add("author")
        if people.find_dated(unit, site, "published") or clues & {
            "label:published_at",
            "label:date_posted",
        }:
            clues.add("date")
        if rating.find_rating(unit, site) is not None:
            clues.add("rating")
        if unit.is_page:
            blocks = paragraph_blocks(unit)
            if blocks and (
                len(blocks[0][1]) >= 3 or sum(len(text_of(p)) for p in blocks[0][1]) >= 600
            ):
                clues.add("body")
        else:
            text = people.find_text(unit, site)
            if text is not None:
                clues.add("text")
        evidence.add(clues, unit.page.types if unit.is_page else [])
    return evidence


def _declaration(item_type: str, fields: dict[str, FieldProposal], cards: bool) -> dict[str, Any]:
    """[item_fields] of a declared type: its fields the sample showed (and the required
    ones), keyed by the site's id, else (cards) by the field marked ``key_fallback``."""
    vocabulary = declared_fields(item_type)
    out: dict[str, dict[str, Any]] = {}
    key = next((n for n, s in vocabulary.items() if s.get("key") and n in fields), None)
    if key is None and cards:
        key = next((n for n, s in vocabulary.items() if s.get("key_fallback")), None)
    for name, spec in vocabulary.items():
        if (name in fields and fields[name].sure) or spec.get("required"):
            entry = {k: v for k, v in spec.items() if k not in ("key", "key_fallback")}
            if name == key:
                entry["key"] = True
            out[name] = entry
    return out


def _id_field(item_type: str) -> str | None:
    if item_type in DECLARED:
        return next((n for n, s in declared_fields(item_type).items() if s.get("key")), None)
    return schema_by_type(item_type).id_field


def _id_from_cards(found: Study, units: Sequence[Unit], item_type: str) -> None:
    """A card's own id (``<div class="quote" id="q4012">``), when every card has one and
    no two on a page share it: the item's id."""
    id_field = _id_field(item_type)
    if not id_field or id_field in found.fields:
        return
    for attr in ("id", "data-id"):
        ids = [u.root.attrib.get(attr) for u in units]
        per_page: dict[str, list[str]] = {}
        for unit, ident in zip(units, ids, strict=True):
            per_page.setdefault(unit.page.url, []).append(ident or "")
        unique = all(len(set(v)) == len(v) for v in per_page.values())
        if all(ids) and unique and all(any(c.isdigit() for c in i or "") for i in ids):
            n = len(units)
            rule = {"xpath": f"./@{attr}"}
            found.fields[id_field] = FieldProposal(
                id_field, Choice([rule], n, n, units=n), ["card"]
            )
            return
    if link := permalink_rule(units):
        n = len(units)
        found.fields[id_field] = FieldProposal(id_field, Choice([link], n, n, units=n), ["link"])


def permalink_rule(units: Sequence[Unit]) -> dict[str, Any] | None:
    """A card's link to its own page (``/reviews/68228cf6...``): the id at the end of it,
    when every card has one under the same path and no two share it."""
    by_prefix: dict[str, list[str]] = {}
    for unit in units:
        for href in dict.fromkeys(unit.root.xpath(".//a/@href").getall()):
            match = re.search(r"(/[A-Za-z][\w-]*/)([\w-]{6,})/?(?:[?#].*)?$", href)
            if match and any(c.isdigit() for c in match.group(2)):
                by_prefix.setdefault(match.group(1), []).append(match.group(2))
    # The card's own link first: the one around its heading.
    headed = {
        m.group(1)
        for unit in units
        for href in unit.root.xpath(".//a[.//h1|.//h2|.//h3|.//h4|.//h5]/@href").getall()
        if (m := re.search(r"(/[A-Za-z][\w-]*/)[\w-]{6,}/?(?:[?#].*)?$", href))
    }
    ranked = sorted(by_prefix.items(), key=lambda kv: (kv[0] not in headed, -len(kv[1])))
    for prefix, ids in ranked:
        if len(ids) == len(units) and len(set(ids)) == len(ids):
            literal = prefix.replace("'", "")
            return {
                "xpath": f".//a[contains(@href, '{literal}')]/@href",
                "re": re.escape(prefix) + r"([\w-]+)",
            }
    return None


def _id_from_url(found: Study, units: Sequence[Unit], item_type: str) -> None:
    """The item's id from its URL, when no page shows one (``/job/1042``)."""
    id_field = schema_by_type(item_type).id_field
    if not id_field or (id_field in found.fields and found.fields[id_field].sure):
        return
    rule = url_id_rule(units)
    if rule is not None:
        n = len(units)
        found.fields[id_field] = FieldProposal(id_field, Choice([rule], n, n, units=n), ["url"])
