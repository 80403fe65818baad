"""What varies across pages (or cards) of one template: its slots, and what each slot's
values look like (a money amount, a date, a suffixed count, a long text, a list).

A slot is a selector, relative to the unit (a page, or a card of a list), whose matches
hold text: ``h1.titel``, ``span.preis``, ``.pfad li``. Aligned over the units of a
template, a slot whose first value differs between units carries item data; one that
never changes is layout. Pure functions over parsel selectors.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from crawlers.scaffold.classify import css_of
from crawlers.spiders.currency import printed_sign
from crawlers.spiders.printed import printed_date, printed_number

__all__ = ["Slot", "slots_of"]

_SKIPPED = {"script", "style", "noscript", "option", "button", "label", "form", "input"}
# A number with its sign or ISO code beside it: "1.234,56 €", "$12.99", "EUR 12".
_MONEY = re.compile(r"^\D{0,4}\d[\d.,\s\u00a0\u202f']*\D{0,4}$")
_COUNT = re.compile(r"^\d[\d.,\s]*\s?[^\W\d]{0,4}\.?(\s+\w+){0,3}$")


@dataclass
class Slot:
    """One selector's values over the units of a template (None: no match in a unit)."""

    css: str
    values: list[list[str]] = field(default_factory=list)
    attr: str | None = None
    own: list[str] = field(default_factory=list)  # the first match's own direct text

    @property
    def own_varies(self) -> bool:
        """Its own text differs between units (``Tags:`` around varying links does not)."""
        return self.attr is not None or len({o for o in self.own if o}) > 1

    @property
    def firsts(self) -> list[str | None]:
        return [v[0] if v else None for v in self.values]

    @property
    def present(self) -> float:
        return sum(1 for v in self.values if v) / max(1, len(self.values))

    @property
    def varies(self) -> bool:
        firsts = [f for f in self.firsts if f]
        return len(set(firsts)) > 1

    @property
    def many(self) -> bool:
        """Several matches in most units: a list (tags, a gallery, breadcrumbs)."""
        return sum(len(v) > 1 for v in self.values) >= 0.5 * len(self.values)

    def share(self, test: Any) -> float:
        firsts = [f for f in self.firsts if f]
        return sum(1 for f in firsts if test(f)) / max(1, len(firsts))

    def looks_money(self) -> bool:
        return self.share(lambda t: bool(_MONEY.match(t)) and printed_sign(t) is not None) >= 0.8

    def looks_count(self, languages: Sequence[str]) -> bool:
        def count(text: str) -> bool:
            return bool(_COUNT.match(text)) and printed_number(text, languages) is not None

        return not self.looks_money() and self.share(count) >= 0.8

    def looks_date(self, languages: Sequence[str]) -> bool:
        def date(text: str) -> bool:
            return bool(re.search(r"\d", text)) and printed_date(text, languages) is not None

        return self.share(date) >= 0.8

    @property
    def length(self) -> float:
        texts = [" ".join(v) for v in self.values if v]
        return sum(len(t) for t in texts) / max(1, len(texts))


def slots_of(units: Sequence[Any], skip: frozenset[str] = frozenset()) -> list[Slot]:
    """The text slots (and image slots) of ``units``, in document order of the first
    unit holding each; ``skip``: selectors of the site's chrome."""
    order: dict[tuple[str, str | None], None] = {}
    for unit in units:
        for element in unit.xpath(".//*"):
            tag = element.root.tag
            if not isinstance(tag, str) or tag in _SKIPPED or _inside_skipped(element):
                continue
            css = _relative_css(element, unit)
            if not css or css in skip:
                continue
            if tag == "img" and element.attrib.get("src"):
                order.setdefault((f"{css}", "src"), None)
            elif any(t.strip() for t in element.xpath("./text()").getall()):
                order.setdefault((css, None), None)
    slots = []
    for css, attr in order:
        values, own = [], []
        for unit in units:
            found = unit.css(css)
            if attr:
                values.append([v for x in found if (v := x.attrib.get(attr))])
            else:
                values.append([t for x in found if (t := _text(x))])
            own.append(
                " ".join(" ".join(found[0].xpath("./text()").getall()).split()) if found else ""
            )
        slots.append(Slot(css, values, attr, own))
    return slots


def _inside_skipped(element: Any) -> bool:
    return bool(element.xpath("ancestor::*[self::select or self::button or self::form]"))


def _text(element: Any) -> str:
    return " ".join(" ".join(element.xpath(".//text()").getall()).split())


def _relative_css(element: Any, unit: Any) -> str:
    """``tag.class`` of a classed element; else ``<classed ancestor inside the unit> tag``;
    else the tag alone (an unclassed ``h1``, ``li`` of an unclassed list)."""
    classes = (element.attrib.get("class") or "").split()
    own = css_of(element.root.tag, classes)
    if "." in own:
        return own
    depth = len(element.xpath("ancestor::*"))
    unit_depth = len(unit.xpath("ancestor-or-self::*")) if hasattr(unit, "xpath") else 0
    for ancestor in reversed(element.xpath("ancestor::*[@class]")):
        if len(ancestor.xpath("ancestor::*")) < unit_depth:
            break
        named = css_of(ancestor.root.tag, (ancestor.attrib.get("class") or "").split())
        if "." in named and depth - len(ancestor.xpath("ancestor::*")) <= 3:
            return f"{named} {element.root.tag}"
    return element.root.tag if element.root.tag in ("h1", "h2", "h3", "time") else ""
