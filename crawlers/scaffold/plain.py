"""Sites without structured data: page types from repeated templates, fields from what
varies across the pages (or cards) of one template.

* A template whose repeated cards link to pages of another template showing the cards'
  texts is a LISTING of DETAIL pages; the detail pages' slots are mapped to the item
  type's fields by what they look like: the varying ``h1`` -> name/title, a money
  pattern -> price and currency, the image gallery, the breadcrumb list (its last entry
  the ``h1``), key/value table rows (labelled like a field, or holding the id the URL
  shows), the longest text -> description, a star row -> rating, a suffixed count ->
  review count, a date -> the first date field.
* A template whose cards link to no such pages carries its items itself (quotes,
  reviews, results): an ITEMS page type (``items = "<card css>"``) and an item type
  declared in the profile from the cards' slots (named after their classes, typed by
  their values: date, count, long text, a list), keyed by the cards' own ``id``.

Refusal only when no template repeats at all (``PlainRefusal`` says what was seen).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

from crawlers.scaffold.classify import (
    HOME,
    LISTING,
    Classification,
    Page,
    PageType,
    _hub_name,
    generalise,
)
from crawlers.scaffold.fields import FieldProposal
from crawlers.scaffold.rows import choice_css, css_of_classes, star_count_css, table_rules
from crawlers.scaffold.slots import Slot, slots_of
from crawlers.scaffold.templates import Template, find_templates, text_leaves
from crawlers.spiders.rules import Kind, url_target

__all__ = ["ITEMS", "PlainProposal", "PlainRefusal", "plain_proposal"]

ITEMS = "items"  # the role of a page type whose cards are the items
CARD_ON_DETAIL = 0.6  # share of a card's texts its detail page shows
LONG_TEXT = 80  # characters: a description, a quote's text, a review's body


class PlainRefusal(ValueError):
    """No repeated template: the message says what the sample held."""


@dataclass
class PlainProposal:
    classification: Classification
    fields: dict[str, FieldProposal]
    items_css: str | None = None  # the ITEMS page type's card container
    declared: dict[str, dict[str, Any]] = field(default_factory=dict)  # [item_fields]
    languages: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)


def plain_proposal(
    pages: Sequence[Page],
    start_url: str,
    kinds_of: Any,
    item_type: str | None = None,
    taken_types: Sequence[str] = (),
) -> PlainProposal:
    """The page types and fields of a site without structured data. ``kinds_of(type)``
    gives an item type's field kinds (``crawlers.spiders.rules.field_kinds``)."""
    start = {url_target(start_url)} | {p.path for p in pages if p.source == "start"}
    templates = find_templates(pages, start)
    if not templates:
        good = [p for p in pages if p.html and p.status < 400 and not p.blocked]
        shapes = ", ".join(sorted({r.regex for r in generalise([p.url for p in good])})[:6])
        raise PlainRefusal(
            f"no repeated page template among {len(good)} readable sampled pages "
            f"(no structured data; URL shapes seen: {shapes or 'none'})"
        )
    languages = _languages(pages)
    detail, listing = _detail_and_listing(templates)
    types: dict[str, PageType] = {}
    notes: list[str] = []
    if detail is not None:
        units = [p.response.css("body")[0] for p in detail.pages]
        slots = [s for s in slots_of(units) if s.present >= 0.5]
        chosen = item_type or ("product" if any(s.looks_money() for s in slots) else None)
        if chosen is None:
            chosen = _own_type_name(_first_segment(detail), taken_types)
            fields, declared = _declared_fields(slots, languages, None)
        else:
            fields, declared = _mapped_fields(chosen, kinds_of(chosen), detail, slots, languages)
        types[chosen] = PageType(chosen, "detail", detail.pages, detail.patterns)
        items_css = None
    else:
        listing = None
        holder = next((t for t in templates if t.cards), None)
        if holder is None or holder.cards is None:
            raise PlainRefusal(
                f"{len(templates)} repeated template(s) ({', '.join(templates[0].regexes)}, ...) "
                "but none shows an item: no detail pages and no repeated cards of several texts"
            )
        slots = [s for s in slots_of(holder.cards.all) if s.present >= 0.3]
        name = _card_name(holder.cards.css)
        chosen = item_type or _own_type_name(name, taken_types)
        fields, declared = _declared_fields(slots, languages, holder.cards.per_page)
        types[chosen] = PageType(chosen, ITEMS, holder.pages, holder.patterns)
        items_css = holder.cards.css
        notes.append(
            f"pages.{chosen}: {len(holder.cards.all)} cards ({holder.cards.css}) on "
            f"{len(holder.pages)} sampled pages carry the items: one item per card (GUESS)"
        )
    if listing is not None:
        types[LISTING] = PageType(LISTING, LISTING, listing.pages, listing.patterns)
    item_regexes = [r for t in types.values() for r in t.regexes]
    for template in templates:
        if template in (detail, listing) or any(t.pages == template.pages for t in types.values()):
            continue
        leads = sum(
            any(re.search(r, url_target(link.url)) for r in item_regexes for link in p.links)
            for p in template.pages
        )
        if leads >= 0.8 * len(template.pages) and template.cards is not None:
            name = _hub_name(template.pages[0].path, set(types) | {HOME})
            types[name] = PageType(name, "hub", template.pages, template.patterns)
    home = [p for p in pages if p.path in start and p.html]
    if home:
        types[HOME] = PageType(HOME, HOME, home[:1], generalise([home[0].url]))
    classification = Classification(chosen, types, [], Counter())
    return PlainProposal(classification, fields, items_css, declared, languages, notes)


# -- templates -> page types -------------------------------------------------------------------


def _detail_and_listing(templates: Sequence[Template]) -> tuple[Template | None, Template | None]:
    """The listing whose cards lead to pages of another template showing the cards'
    texts, and that template (the detail pages)."""
    best: tuple[float, Template, Template] | None = None
    for listing in templates:
        if listing.cards is None:
            continue
        for detail in templates:
            if detail is listing:
                continue
            shown = _card_texts_on(listing, detail)
            if shown >= CARD_ON_DETAIL and (best is None or shown > best[0]):
                best = (shown, detail, listing)
    if best is not None:
        return best[1], best[2]
    # No listing seen: a template of several pages with a varying h1 is the detail page.
    for template in templates:
        h1 = [" ".join(p.response.css("h1 ::text").getall()).strip() for p in template.pages]
        if template.cards is None and len(template.pages) >= 3 and len(set(h1)) == len(h1):
            return template, None
    return None, None


def _card_texts_on(listing: Template, detail: Template) -> float:
    by_url = {p.url: p for p in detail.pages}
    shares = []
    for page, cards in zip(
        listing.pages, listing.cards.per_page if listing.cards else [], strict=False
    ):
        for card in cards:
            for href in card.css("a::attr(href)").getall():
                target = by_url.get(urljoin(page.url, href).split("#")[0])
                if target is None:
                    continue
                texts = [t for t in text_leaves(card) if len(t) > 2]
                body = " ".join(target.response.css("body ::text").getall())
                body = " ".join(body.split())
                shares.append(sum(t in body for t in texts) / max(1, len(texts)))
                break
    return sum(shares) / len(shares) if len(shares) >= 2 else 0.0


def _first_segment(template: Template) -> str:
    return _hub_name(template.pages[0].path, set())


def _card_name(css: str) -> str:
    classes = css.split(".")[1:] or [css]
    name = re.sub(r"[^a-z0-9_]+", "_", classes[0].lower()).strip("_") or "item"
    return name if name[0].isalpha() else f"item_{name}"


def _own_type_name(name: str, taken: Sequence[str]) -> str:
    return name if name not in taken else f"{name}_item"


def _languages(pages: Sequence[Page]) -> tuple[str, ...]:
    langs = [p.response.xpath("/html/@lang").get() for p in pages if p.html]
    found = [lang for lang in langs if lang]
    return (max(set(found), key=found.count),) if found else ()


# -- fields of a known item type ---------------------------------------------------------------


def _mapped_fields(
    item_type: str,
    kinds: dict[str, Kind],
    detail: Template,
    slots: list[Slot],
    languages: Sequence[str],
) -> tuple[dict[str, FieldProposal], dict[str, dict[str, Any]]]:
    pages = len(detail.pages)
    fields: dict[str, FieldProposal] = {}
    varying = [s for s in slots if s.varies or s.many]

    def put(name: str | None, proposal: FieldProposal) -> None:
        if name and name in kinds and name not in fields:
            fields[name] = proposal

    def first(kind: str, many: bool | None = None, like: str = "") -> str | None:
        for name, k in kinds.items():
            fits = k.name == kind and (many is None or k.many == many) and like in name
            if fits and name not in fields and name not in ("url", "job_id", "incomplete"):
                return name
        return None

    def found(slot: Slot) -> int:
        return sum(1 for v in slot.values if v)

    h1 = next((s for s in varying if s.css.split(".")[0].split(" ")[-1] == "h1"), None)
    if h1:
        put("name" if "name" in kinds else "title", FieldProposal("name", found(h1), css=h1.css))
    money = next((s for s in varying if s.looks_money() and not s.many), None)
    if money:
        put(
            first("money", like="price") or first("money"),
            FieldProposal("price", found(money), css=money.css),
        )
        put(first("currency"), FieldProposal("currency", found(money), css=money.css))
    images = next((s for s in varying if s.attr == "src" and s.varies), None)
    if images:
        put(
            first("url", many=True),
            FieldProposal("images", found(images), css=images.css, attr="src", all=True),
        )
    if h1:
        titles = h1.firsts
        for slot in slots:
            if slot.many and slot.share(lambda _: True) and slot.css.endswith(" li"):
                last = [v[-1] if v else None for v in slot.values]
                if sum(a == b for a, b in zip(last, titles, strict=False)) >= 0.8 * pages:
                    crumbs = FieldProposal("breadcrumbs", found(slot), css=slot.css, all=True)
                    put(next((n for n in kinds if "breadcrumb" in n), None), crumbs)
                    category = f"{slot.css}:nth-last-child(2)"
                    put("category", FieldProposal("category", found(slot), css=category))
                    break
    text = max((s for s in varying if s.length >= LONG_TEXT), key=lambda s: s.length, default=None)
    if text:
        put(
            first("long_text"),
            FieldProposal("description", found(text), css=text.css, all=text.many),
        )
    stars = star_count_css(detail.pages) or _star_row(detail.pages)
    if stars:
        put(
            first("float", like="rating") or first("int", like="rating"),
            FieldProposal("rating", stars[1], css=stars[0], count=True),
        )
    counts = [s for s in varying if not s.many and s.looks_count(languages) and s is not money]
    if counts:
        put(
            first("int", like="count"),
            FieldProposal("review_count", found(counts[0]), css=counts[0].css),
        )
    if choices := choice_css(detail.pages):  # the sizes, colours or sets it is sold in
        variants = FieldProposal("variants", choices[1], css=choices[0], all=True)
        put(first("text", many=True, like="variant"), variants)
    dates = [s for s in varying if not s.many and s.looks_date(languages)]
    if dates:
        put(first("date"), FieldProposal("date", found(dates[0]), css=dates[0].css))
    missing = [n for n in kinds if n not in fields and n not in ("url", "job_id", "incomplete")]
    for name, (table, label, n) in table_rules(detail.pages, missing).items():
        fields[name] = FieldProposal(name, n, table=table, label=label)
    _id_from_table(detail, kinds, fields, item_type)
    for name, proposal in fields.items():
        proposal.name = name
    return fields, {}


def _star_row(pages: Sequence[Page]) -> tuple[str, int] | None:
    """A row of 5 or 10 textless icons of one tag, some with a second class whose number
    varies between pages: ``<row> <tag>.<icon>.<filled>``, counted."""
    rows: dict[tuple[str, str], list[list[set[str]]]] = {}
    for page in pages:
        for row in page.response.xpath("//body//*[@class][count(*) = 5 or count(*) = 10]"):
            icons = row.xpath("./*")
            tags = {icon.root.tag for icon in icons}
            css = css_of_classes(row)
            if len(tags) != 1 or not css or "".join(row.xpath(".//text()").getall()).strip():
                continue
            classes = [set((icon.attrib.get("class") or "").split()) for icon in icons]
            rows.setdefault((css, tags.pop()), []).append(classes)
    for (css, tag), seen in rows.items():
        if len(seen) < 0.8 * len(pages):
            continue
        base = set.intersection(*(c for row in seen for c in row))
        others = Counter(c for row in seen for icons in row for c in icons if c not in base)
        if len(base) != 1 or len(others) != 1:
            continue
        mark = next(iter(others))
        filled = {sum(mark in icons for icons in row) for row in seen}
        if len(filled) > 1:
            return f"{css} {tag}.{next(iter(base))}.{mark}", len(seen)
    return None


def _id_from_table(
    detail: Template, kinds: dict[str, Kind], fields: dict[str, FieldProposal], item_type: str
) -> None:
    """A key/value row whose value the page's URL shows is the site's id."""
    from core.items_schema import schema_by_type

    id_field = schema_by_type(item_type).id_field
    if not id_field or id_field in fields:
        return
    hits: dict[tuple[str, str], int] = {}
    for page in detail.pages:
        for key in page.response.xpath("//th | //dt"):
            label = " ".join(" ".join(key.xpath(".//text()").getall()).split()).rstrip(":")
            value = " ".join(
                key.xpath("following-sibling::*[self::td or self::dd][1]//text()").getall()
            ).strip()
            table = key.xpath("ancestor::*[self::table or self::dl][1]")
            if value and len(value) >= 3 and value in page.url and table:
                classes = (table[0].attrib.get("class") or "").split()
                css = table[0].root.tag + "".join(f".{c}" for c in classes)
                hits[css, label] = hits.get((css, label), 0) + 1
    if hits:
        (css, label), n = max(hits.items(), key=lambda kv: kv[1])
        if n >= 0.8 * len(detail.pages):
            fields[id_field] = FieldProposal(id_field, n, table=css, label=label)


# -- fields of an item type the profile declares -----------------------------------------------


def _declared_fields(
    slots: list[Slot], languages: Sequence[str], cards: Sequence[Sequence[Any]] | None
) -> tuple[dict[str, FieldProposal], dict[str, dict[str, Any]]]:
    fields: dict[str, FieldProposal] = {}
    declared: dict[str, dict[str, Any]] = {}
    if cards:
        # The cards' own ids, distinct on each page (a card shown on two lists repeats).
        pages = [[card.attrib.get("id") for card in on_page] for on_page in cards]
        ids = [i for on_page in pages for i in on_page]
        if all(ids) and all(len(set(p)) == len(p) for p in pages):
            fields["item_id"] = FieldProposal("item_id", len(ids), xpath="./@id")
            declared["item_id"] = {"type": "keyword", "key": True}
    for slot in slots:
        if not (slot.varies or slot.many) or not slot.own_varies:
            continue
        name = _slot_name(slot.css)
        if not name or name in fields:
            continue
        found = sum(1 for v in slot.values if v)
        proposal = FieldProposal(name, found, css=slot.css, attr=slot.attr, all=slot.many)
        if slot.attr == "src":
            kind = "url"
        elif slot.looks_date(languages):
            kind = "date"
        elif slot.looks_money():
            kind = "money"
        elif slot.looks_count(languages):
            kind = "count"
        elif slot.length >= LONG_TEXT:
            kind = "long_text"
        else:
            kind = "keyword" if slot.many else "text"
        if kind in ("text", "long_text"):
            proposal.regex = _affixes(slot)
        if slot.many:
            name = name if name.endswith("s") else name + "s"
        proposal.name = name
        fields[name] = proposal
        declared[name] = {"type": kind} | ({"list": True} if slot.many else {})
    longest = max(
        (n for n, d in declared.items() if d["type"] in ("text", "long_text")),
        key=lambda n: next(
            s.length for s in slots if _slot_name(s.css) == n.rstrip("s") or _slot_name(s.css) == n
        ),
        default=None,
    )
    if longest:
        declared[longest]["required"] = True
    return fields, declared


def _slot_name(css: str) -> str:
    last = css.split(" ")[-1]
    classes = last.split(".")[1:]
    word = classes[-1] if classes else ""
    word = re.sub(r"[^a-z0-9_]+", "_", word.lower()).strip("_")
    return word if word and word[0].isalpha() else ""


def _affixes(slot: Slot) -> str | None:
    """``^“(.*?)”$`` when every value is wrapped in the same punctuation."""
    firsts = [f for f in slot.firsts if f]
    if not firsts:
        return None
    # Only quotation marks and brackets: a shared full stop is part of each text.
    prefix = _common(firsts)[:1]
    suffix = _common([f[::-1] for f in firsts])[:1]
    prefix, suffix = (c if c and _wraps(c) else "" for c in (prefix, suffix))
    if not prefix and not suffix:
        return None
    return f"^{re.escape(prefix)}(.*?){re.escape(suffix)}$"


def _wraps(char: str) -> bool:
    return unicodedata.category(char) in ("Pi", "Pf", "Ps", "Pe") or char in "\"'"


def _common(values: Sequence[str]) -> str:
    first = values[0]
    n = 0
    while n < len(first) and all(len(v) > n and v[n] == first[n] for v in values):
        n += 1
    return first[:n]
