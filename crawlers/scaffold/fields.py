"""The field map of a scaffolded site: per item field, the rules that read it, chosen on
the sampled units (detail pages, or the cards of a list) of its item page type.

For each field of the item type, every source that knows it proposes rules on every
unit: the structured data (a ``data`` path the unit's item node carries), the field's
finders (crawlers.scaffold.finders, people, rating) and the labelled values whose label
names it (crawlers.scaffold.labels). The first source with a value on a unit says what
the field's value is there; crawlers.scaffold.synth keeps the rules that read those
values on the most units. A field read on too few of the units where it was seen is not
sure: it is written as a commented hint, never as a rule."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crawlers.scaffold import measures, people, rating
from crawlers.scaffold.finders import (
    Hit,
    Site,
    find_availability,
    find_description,
    find_images,
    find_main_image,
    find_name,
    find_operation,
    find_price,
    find_summary,
    map_rule,
)
from crawlers.scaffold.labels import Labelled, field_for, labelled
from crawlers.scaffold.structured import data_rules, main_node
from crawlers.scaffold.synth import Choice, Unit, choose, read
from crawlers.scaffold.trail import find_breadcrumbs, find_category, find_variants
from crawlers.spiders.rules import Reading, field_kinds

__all__ = ["FieldProposal", "propose_fields", "survey"]

PLATFORM = frozenset({"url", "job_id", "incomplete"})
# Fields whose value is the same on every unit are the site's chrome, unless a code.
VARYING = frozenset({"name", "title", "description", "body", "summary", "images", "image", "text"})
# A labelled value feeding several fields: the salary row gives its range, currency, period.
LABEL_OF = {"salary_min": "salary", "salary_max": "salary", "salary_currency": "salary",
            "salary_period": "salary", "currency": "price"}  # fmt: skip
_FIRST_NUMBER = r"(\d[\d.,]*)"
_SECOND_NUMBER = r"\d[\d.,]*\D+?(\d[\d.,]*)"

Finder = Callable[[Unit, Site, Any], Hit | None]


def _named(finder: Callable[..., Hit | None]) -> Finder:
    return lambda unit, site, name: finder(unit, site, name)


def _plain(finder: Callable[[Unit, Site], Hit | None]) -> Finder:
    return lambda unit, site, name: finder(unit, site)


# Field -> its finders, in order (labelled values are always a source too).
FINDERS: Mapping[str, Sequence[Finder]] = {
    "name": (lambda u, s, n: find_name(u, s),),
    "title": (lambda u, s, n: find_name(u, s),),
    "price": (_named(find_price),),
    "currency": (_named(find_price),),
    "availability": (_plain(find_availability),),
    "breadcrumbs": (_plain(find_breadcrumbs),),
    "category": (_named(find_category),),
    "description": (_plain(find_description),),
    "body": (_plain(find_description),),
    "summary": (_named(find_summary),),
    "images": (_named(find_images),),
    "image": (_named(find_main_image),),
    "rating": (_plain(rating.find_rating),),
    "company_rating": (_plain(rating.find_rating),),
    "review_count": (_plain(rating.find_review_count),),
    "operation": (_named(find_operation),),
    "author": (_plain(people.find_author), lambda u, s, n: people.find_linked(u, s, "author", n)),
    "company": (
        lambda u, s, n: people.find_linked(u, s, "company", n),
        lambda u, s, n: people.find_hinted(u, s, "company", n),
    ),
    "agency": (
        lambda u, s, n: people.find_linked(u, s, "agency", n),
        lambda u, s, n: people.find_hinted(u, s, "agency", n),
    ),
    "brand": (
        lambda u, s, n: people.find_linked(u, s, "brand", n),
        lambda u, s, n: people.find_hinted(u, s, "brand", n),
    ),
    "address": (lambda u, s, n: people.find_hinted(u, s, "address", n),),
    "area_m2": (lambda u, s, n: measures.find_measure(u, s, "area_m2"),),
    "rooms": (lambda u, s, n: measures.find_measure(u, s, "rooms"),),
    "bathrooms": (lambda u, s, n: measures.find_measure(u, s, "bathrooms"),),
    "city": (lambda u, s, n: people.find_hinted(u, s, "city", n),),
    "published_at": (lambda u, s, n: people.find_dated(u, s, "published"),),
    "date_posted": (lambda u, s, n: people.find_dated(u, s, "published"),),
    "updated_at": (lambda u, s, n: people.find_dated(u, s, "updated"),),
    "tags": (_plain(people.find_tags), lambda u, s, n: people.find_list_under(u, s, "tags")),
    "features": (lambda u, s, n: people.find_list_under(u, s, "features"),),
    "skills": (lambda u, s, n: people.find_list_under(u, s, "skills"),),
    "text": (_plain(people.find_text),),
    "variants": (_plain(find_variants),),
    "like_count": (lambda u, s, n: rating.find_count(u, rating.LIKES_RE),),
    "helpful_count": (lambda u, s, n: rating.find_count(u, rating.HELPFUL_RE),),
}
CARD_FINDERS: Mapping[str, Sequence[Finder]] = {
    "body": (_plain(people.find_text),),
    "description": (_plain(people.find_text),),
}


@dataclass
class FieldProposal:
    """The rules chosen for one item field and how they did on the sample."""

    name: str
    choice: Choice
    sources: list[str] = field(default_factory=list)

    @property
    def sure(self) -> bool:
        return self.choice.sure

    @property
    def found(self) -> int:
        return self.choice.found

    def rules(self) -> list[dict[str, Any]]:
        return self.choice.rules

    @property
    def how(self) -> str:
        """The rules in a few words, for the report."""
        parts = []
        for rule in self.rules():
            source = next(k for k in ("data", "css", "xpath", "table", "url", "value") if k in rule)
            text = f"{source} {rule[source]}"
            if source == "table":
                text += f" {rule['label']!r}"
            shaped = [k for k in ("attr", "re", "map", "count", "all") if k in rule]
            parts.append(text + (f" ({', '.join(shaped)})" if shaped else ""))
        return " | ".join(parts)


def _shaping(name: str, kind_name: str, languages: tuple[str, ...]) -> dict[str, Any]:
    """How a labelled value becomes the field: the number out of "3 beds", the range's
    bounds, a code out of its printed phrase."""
    if name == "salary_min":
        return {"re": _FIRST_NUMBER}
    if name == "salary_max":
        return {"re": _SECOND_NUMBER}
    if name in ("availability", "remote", "operation"):
        return map_rule(name, languages)
    if name in ("employment_type", "salary_period"):
        return map_rule(name, languages, anywhere=True)
    if kind_name in ("int", "float"):
        return {"re": r"(\d+(?:[.,]\d+)?)"} if kind_name == "float" else {"re": _FIRST_NUMBER}
    return {}


def compose(rule: Mapping[str, Any], shaping: Mapping[str, Any]) -> dict[str, Any]:
    """A labelled value's rule (its own ``re`` cuts the label: ``^SKU:\\s*(.+)``) with the
    field's shaping (its own ``re``): one regular expression doing both."""
    out = dict(rule) | {k: v for k, v in shaping.items() if k != "re"}
    if "re" not in shaping:
        return out
    field_re = shaping["re"]
    if "re" not in rule:
        out["re"] = field_re
        return out
    prefix = rule["re"].rsplit("(", 1)[0]  # ``^\s*SKU:\s*`` without its catch-all group
    flags = "(?i)" if field_re.startswith("(?i)") else ""
    body = field_re.removeprefix("(?i)").removeprefix("^").removeprefix(r"\W*")
    out["re"] = f"{flags}{prefix}{body}"
    return out


def survey(units: Sequence[Unit], site: Site) -> list[dict[str, Any]]:
    """Per unit: its name hit and its labelled values (read once, used by every field)."""
    return [
        {"name": find_name(unit, site), "labels": labelled(unit.root, unit.is_page)}
        for unit in units
    ]


def propose_fields(
    item_type: str,
    units: Sequence[Unit],
    reading: Reading,
    site: Site,
    schema: str | None = None,
    surveyed: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, FieldProposal]:
    """Field -> its proposal, for every field of ``item_type`` a source found."""
    kinds = field_kinds(item_type)
    surveyed = surveyed if surveyed is not None else survey(units, site)
    names = [n for n in kinds if n not in PLATFORM]
    wanted = {LABEL_OF.get(n, n) for n in names} | {"@id"}
    id_field = _id_field(item_type)
    nodes = [main_node(u.page, schema) if schema and u.is_page else None for u in units]
    labels_by_unit = [_by_field(s["labels"], wanted) for s in surveyed]
    proposals: dict[str, FieldProposal] = {}
    for name in names:
        cards = bool(units) and not units[0].is_page
        finders = (CARD_FINDERS.get(name) if cards else None) or FINDERS.get(name, ())
        label_key = "@id" if name == id_field else LABEL_OF.get(name, name)
        shaping = _shaping(name, kinds[name].name, site.languages)
        expected, proposed, sources = [], [], set()
        for unit, seen, node, by_label in zip(units, surveyed, nodes, labels_by_unit, strict=True):
            name_hit = seen["name"]
            element = name_hit.element if name_hit else None
            hits: list[tuple[str, Hit]] = [
                ("data", Hit(r, [r])) for r in data_rules(item_type, name, node)
            ]
            for finder in finders:
                hit = name_hit if name in ("name", "title") else finder(unit, site, element)
                if hit is not None:
                    hits.append(("page", hit))
            for pair in by_label.get(label_key, []):
                rules = [compose(r, shaping) for r in pair.rules]
                hits.append(("label", Hit(compose(pair.exact, shaping), rules)))
            value = None
            for source, hit in hits:
                value = read(unit, item_type, name, hit.exact, reading, schema)
                if value not in (None, [], ""):
                    sources.add(source)
                    break
            expected.append(value if value not in ([], "") else None)
            proposed.append([rule for _, hit in hits for rule in hit.rules])
        if not any(v is not None for v in expected):
            continue
        if (name in VARYING or (name == "category" and len(units) >= 8)) and _constant(expected):
            continue
        choice = choose(name, item_type, units, expected, proposed, reading, schema)
        proposals[name] = FieldProposal(name, choice, sorted(sources))
    return proposals


def _by_field(found: Sequence[Labelled], wanted: set[str]) -> dict[str, list[Labelled]]:
    out: dict[str, list[Labelled]] = {}
    for pair in found:
        name = field_for(pair.label, wanted)
        if name is not None:
            out.setdefault(name, []).append(pair)
    return out


def _id_field(item_type: str) -> str | None:
    from crawlers.items import schema_by_type

    return schema_by_type(item_type).id_field


def _constant(values: Sequence[Any]) -> bool:
    seen = [repr(v) for v in values if v is not None]
    return len(seen) >= 3 and len(set(seen)) == 1


def url_id_rule(units: Sequence[Unit]) -> dict[str, Any] | None:
    """``{url = '/job/(\\d+)'}`` when every unit's URL carries a distinct id in one place."""
    paths = [u.page.path for u in units if u.is_page]
    if len(paths) < 2:
        return None
    shapes = [re.sub(r"\d+", "#", p) for p in paths]
    if len(set(shapes)) != 1:
        return None
    found = [re.findall(r"\d{2,}", p) for p in paths]
    if not all(f for f in found):
        return None
    position = len(found[0]) - 1
    ids = [f[position] for f in found]
    if len(set(ids)) != len(ids):
        return None
    before = re.escape(paths[0].split(found[0][position])[0].rsplit("/", 1)[-1])
    return {"url": rf"{before}(\d+)"} if before else {"url": r"/(\d+)(?:[/?#]|$)"}
