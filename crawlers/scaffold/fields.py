"""The field map of a scaffolded site's item pages: per item field, its rules in the
profile schema (``FieldRule``), proposed from the sampled detail pages. Pure functions.

A table per item type maps schema.org property paths to item fields; a path is kept only
when the sampled pages' item nodes carry it. A field whose structured value is also the
exact text (or a ``data-*`` / ``src`` attribute) of one visible element on most pages gets
that element's CSS as a fallback; an HTML description is read from the page's paragraphs
first; a field the structured data lacks comes from the key/value table row labelled
like it.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from parsel import Selector

from crawlers.scaffold.classify import Page, PageType
from crawlers.spiders.common import schema_name
from crawlers.spiders.rules import first_node, node_values

# (schema.org path, item field, value map) per item type; the first path found on most
# pages wins a field.
FIELD_MAPS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "product": (
        ("name", "name"),
        ("sku", "product_id"),
        ("productID", "product_id"),
        ("mpn", "product_id"),
        ("brand.name", "brand"),
        ("brand", "brand"),
        ("offers.price", "price"),
        ("offers.lowPrice", "price"),
        ("offers.priceCurrency", "currency"),
        ("offers.availability", "availability"),
        ("aggregateRating.ratingValue", "rating"),
        ("aggregateRating.reviewCount", "review_count"),
        ("aggregateRating.ratingCount", "review_count"),
        ("description", "description"),
        ("image", "images"),
        ("category", "category"),
        ("color", "color"),
        ("material", "material"),
    ),
    "job_posting": (
        ("identifier.value", "posting_id"),
        ("identifier", "posting_id"),
        ("title", "title"),
        ("hiringOrganization.name", "company"),
        ("hiringOrganization.sameAs", "company_url"),
        ("hiringOrganization.url", "company_url"),
        ("employmentType", "employment_type"),
        ("jobLocationType", "remote"),
        ("jobLocation.address.addressLocality", "city"),
        ("jobLocation.address.addressRegion", "region"),
        ("jobLocation.address.addressCountry", "country"),
        ("baseSalary.currency", "salary_currency"),
        ("baseSalary.value.minValue", "salary_min"),
        ("baseSalary.value.maxValue", "salary_max"),
        ("baseSalary.value.unitText", "salary_period"),
        ("datePosted", "date_posted"),
        ("validThrough", "valid_through"),
        ("description", "description"),
        ("skills", "skills"),
        ("experienceRequirements", "experience_level"),
        ("occupationalCategory", "category"),
        ("industry", "category"),
    ),
    "hotel": (
        ("identifier", "hotel_id"),
        ("name", "name"),
        ("address.streetAddress", "address"),
        ("address.addressLocality", "city"),
        ("address.addressCountry", "country"),
        ("starRating.ratingValue", "star_rating"),
        ("aggregateRating.ratingValue", "review_score"),
        ("aggregateRating.reviewCount", "review_count"),
        ("makesOffer.price", "price"),
        ("makesOffer.priceCurrency", "currency"),
        ("description", "description"),
        ("amenityFeature.name", "amenities"),
        ("image", "images"),
    ),
    "property_listing": (
        ("identifier", "listing_id"),
        ("name", "title"),
        ("offers.price", "price"),
        ("price", "price"),
        ("offers.priceCurrency", "currency"),
        ("priceCurrency", "currency"),
        ("address.streetAddress", "address"),
        ("address.addressLocality", "city"),
        ("address.addressRegion", "region"),
        ("address.addressCountry", "country"),
        ("numberOfRooms", "rooms"),
        ("numberOfBathroomsTotal", "bathrooms"),
        ("description", "description"),
        ("image", "images"),
        ("datePosted", "published_at"),
    ),
}
# Fields whose structured value is a code that needs a value map, not a copy: the map, and
# the value of a page whose item node lacks the property.
VALUE_MAPS: Mapping[tuple[str, str], tuple[Mapping[str, Any], Any]] = {
    ("job_posting", "remote"): ({"TELECOMMUTE": True}, False),
}
# Item fields the platform sets, never a page rule.
_NOT_RULED = frozenset({"url", "job_id", "incomplete"})
# A CSS fallback must find the structured value on at least this share of the pages.
CSS_MIN_SHARE = 0.6
_SKIPPED_TAGS = {"script", "style", "head", "title", "meta", "link", "noscript", "html", "body"}


@dataclass
class FieldProposal:
    """The rules proposed for one item field, in the order the engine tries them."""

    name: str
    found: int  # detail pages where the main source has a value
    path: str | None = None  # structured data
    value_map: Mapping[str, Any] = field(default_factory=dict)
    default: Any = None
    css: str | None = None
    attr: str | None = None
    paragraphs: bool = False  # the CSS reads every paragraph (all = true), before the data
    count: bool = False  # the CSS's matches are counted (filled stars)
    table: str | None = None
    label: str | None = None
    # Pages without structured data (crawlers.scaffold.plain): every match (a list, a
    # gallery), an XPath (a card's own attribute), the text inside printed affixes.
    all: bool = False
    xpath: str | None = None
    regex: str | None = None

    def rules(self) -> list[dict[str, Any]]:
        data: dict[str, Any] | None = None
        if self.path:
            data = {"data": self.path}
            if self.value_map:
                data["map"] = dict(self.value_map)
            if self.default is not None:
                data["default"] = self.default
        css: dict[str, Any] | None = None
        if self.css:
            css = {"css": self.css}
            if self.attr:
                css["attr"] = self.attr
            if self.paragraphs or self.all:
                css["all"] = True
            if self.count:
                css["count"] = True
            if self.regex:
                css["re"] = self.regex
        if self.xpath:
            css = {"xpath": self.xpath}
        ordered = [css, data] if self.paragraphs else [data, css]
        if self.table:
            ordered.append({"table": self.table, "label": self.label})
        return [rule for rule in ordered if rule]

    @property
    def how(self) -> str:
        """The rules in a few words, for the report."""
        parts = []
        for rule in self.rules():
            if "data" in rule:
                parts.append(rule["data"] + (" (mapped)" if "map" in rule else ""))
            elif "table" in rule:
                parts.append(f"table {rule['table']} {rule['label']!r}")
            elif "xpath" in rule:
                parts.append(f"xpath {rule['xpath']}")
            else:
                shaped = " (all)" if rule.get("all") else " (count)" if rule.get("count") else ""
                parts.append(f"css {rule['css']}{shaped}")
        return " | ".join(parts)


def path_values(node: Any, path: str) -> list[Any]:
    """Every non-empty value at a dotted path of a structured-data node, as a ``data``
    rule reads it."""
    return [v for v in node_values(node, path) if v not in ("", [], {})]


def main_node(page: Page, schema_type: str) -> dict[str, Any] | None:
    """The page's item node (JSON-LD first, then microdata), as the rules engine reads it."""
    return first_node([*page.nodes["json-ld"], *page.nodes["microdata"]], schema_type)


def propose_fields(
    item_type: str, detail: PageType, item_fields: Sequence[str] = ()
) -> dict[str, FieldProposal]:
    """Item field -> its rules: the structured path most detail pages carry (with a value
    map where the item needs one), a CSS fallback where a visible element shows the same
    value (for an HTML description: its paragraphs, read first), and, for fields the
    structured data lacks, the row of a key/value table labelled with the field's name.
    ``item_fields``: the item type's fields (others are not proposed); empty: no check."""
    nodes = [
        (page, node)
        for page in detail.pages
        if (node := main_node(page, detail.schema_type or "")) is not None
    ]
    proposals: dict[str, FieldProposal] = {}
    for path, name in FIELD_MAPS.get(item_type, ()):
        if item_fields and name not in item_fields:
            continue
        found = sum(1 for _, node in nodes if _scalar(path_values(node, path)) is not None)
        if not found or (name in proposals and proposals[name].found >= found):
            continue
        proposal = FieldProposal(name, found, path)
        if (item_type, name) in VALUE_MAPS:
            proposal.value_map, proposal.default = VALUE_MAPS[item_type, name]
        proposals[name] = proposal
    for proposal in proposals.values():
        if proposal.value_map or proposal.path is None:
            continue
        samples = [(page, path_values(node, proposal.path)) for page, node in nodes]
        if paragraphs := paragraph_css(samples):
            proposal.css, proposal.paragraphs = paragraphs, True
        elif found := css_fallback(samples):
            proposal.css, proposal.attr = found
    missing = [name for name in item_fields if name not in proposals and name not in _NOT_RULED]
    for name, (table, label, found) in table_rules(detail.pages, missing).items():
        proposals[name] = FieldProposal(name, found, table=table, label=label)
    rated = [name for name in missing if "rating" in name or "star" in name]
    if rated and rated[0] not in proposals and (stars := star_count_css(detail.pages)):
        # One star row per page: it is the first of the missing ratings', no other's.
        css, found = stars
        proposals[rated[0]] = FieldProposal(rated[0], found, css=css, count=True)
    return proposals


# -- paragraphs and tables ---------------------------------------------------------------------


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
            region = _selector(parent, tag, classes, None) if tag else ""
            if region:
                regions.append(f"{region} p")
    for css in dict.fromkeys(regions):
        hits = sum(
            1
            for other, expected in wanted
            if [_element_text(p) for p in other.response.css(css)] == expected
        )
        if hits / len(wanted) >= CSS_MIN_SHARE:
            return css
    return None


def _first(values: Sequence[Any]) -> Any:
    return values[0] if values else None


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
        seen = set()
        for key in page.response.xpath("//th | //dt | //tr/td[1]"):
            label = " ".join(" ".join(key.xpath(".//text()").getall()).split()).rstrip(":")
            name = label_field(label, wanted)
            if name is None:
                continue
            tables = key.xpath("ancestor::*[self::table or self::dl][1]")
            value = key.xpath("following-sibling::*[self::td or self::dd][1]")
            if not tables or not value or not _element_text(value[0]):
                continue
            table = tables[0]
            classes = (table.attrib.get("class") or "").split()
            seen.add(
                (name, _selector(table, table.root.tag, classes, None) or table.root.tag, label)
            )
        counts.update(seen)
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


def _scalar(values: Sequence[Any]) -> Any:
    """The first plain value (a nested node counts by its name/value, as the engine reads it)."""
    for value in values:
        if isinstance(value, dict):
            value = value.get("name") or value.get("value") or value.get("@id")
        if isinstance(value, str | int | float | bool) and str(value).strip():
            return value
    return None


def _same(text: str, value: Any) -> bool:
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
                if _same(resolved, value):
                    found.append((_selector(element, tag, classes, name), name))
        if _same(own, value):
            found.append((_selector(element, tag, classes, None), None))
    # The value's own element (the innermost) first, text before attributes.
    found.reverse()
    found.sort(key=lambda hit: hit[1] is not None)
    return [hit for hit in dict.fromkeys(found) if hit[0]]


def _selector(element: Any, tag: str, classes: list[str], attr: str | None) -> str:
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
    with_value = [(page, _scalar(values)) for page, values in samples]
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
            shown = matched[0].attrib.get(attr, "") if attr else _element_text(matched[0])
            if attr == "src":
                shown = urljoin(other.url, shown)
            if not _same(shown, wanted):
                break
            hits += 1
        else:
            if hits / len(with_value) >= CSS_MIN_SHARE:
                return css, attr
    return None


def _element_text(element: Any) -> str:
    return " ".join(part.strip() for part in element.xpath(".//text()").getall() if part.strip())
