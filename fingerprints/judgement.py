"""Is the data complete? The judgement of the site's callbacks' outputs on a sample, pure:
outputs (``fingerprints.extraction.run_callbacks``) and the site's coverage baseline in, a
report out.

Extraction is complete when every page yielded items or requests other than its own
pagination (a listing's detail pages), no callback failed, every item validates against
its schema (``core.items_schema``), no field of the coverage baseline is lost
(``fingerprints.evidence.judge_lost``: a field the page does not show is absent, not
lost) and no card field is lost (``card_baselines``: the fill rates of the cards the same
callback reads on the site's fixtures).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from itemadapter import ItemAdapter

from core.items_schema import UnknownItemType
from crawlers.items import schema_for
from fingerprints.coverage import CoverageBaseline, is_filled, lost_fields
from fingerprints.evidence import PageItems, judge_lost, missed
from fingerprints.extraction import HARNESS_FIELDS, PageOutput

MAX_INVALID_SHOWN = 5
CARD_NO_DROPS = 2**31  # card baselines' min_items: never enough cards to judge drops
# A failed page type without items failed on every field the baseline fills this often.
EXPECTED_RATE = 0.5


@dataclass(frozen=True)
class PageTypeExtraction:
    page_type: str
    callback: str | None
    pages: int
    items: int
    requests: int
    invalid: tuple[Mapping[str, Any], ...] = ()  # {"url", "errors": [...]}
    lost_fields: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    expected_fields: tuple[str, ...] = ()  # the coverage baseline's (for a failed type)
    cards: int = 0
    lost_card_fields: tuple[str, ...] = ()  # card fields lost on every card of the sample

    @property
    def complete(self) -> bool:
        return (
            not self.errors
            and not self.invalid
            and not self.lost_fields
            and not self.lost_card_fields
        )

    @property
    def failed_fields(self) -> list[str]:
        """Fields lost on this page type's items or invalid on one of them; when it failed
        without yielding a single item, every field the coverage baseline expects."""
        if self.errors and not self.items:
            return list(self.expected_fields)
        names = list(self.lost_fields)
        names += [name for name in self.lost_card_fields if name not in names]
        for entry in self.invalid:
            for error in entry["errors"]:
                name = error.split(":", 1)[0].split(".", 1)[0]
                if name not in names:
                    names.append(name)
        return names

    def to_dict(self) -> dict[str, Any]:
        return {
            "complete": self.complete,
            "callback": self.callback,
            "pages": self.pages,
            "items": self.items,
            "requests": self.requests,
            "invalid_items": len(self.invalid),
            "invalid": list(self.invalid[:MAX_INVALID_SHOWN]),
            "lost_fields": list(self.lost_fields),
            "cards": self.cards,
            "lost_card_fields": list(self.lost_card_fields),
            "errors": list(self.errors),
        }


@dataclass(frozen=True)
class ExtractionReport:
    page_types: Mapping[str, PageTypeExtraction] = field(default_factory=dict)
    lost: tuple[str, ...] = ()  # coverage baseline fields lost over the whole sample
    coverage_note: str = ""  # e.g. no coverage baseline: only the item schemas judged

    @property
    def complete(self) -> bool:
        return bool(self.page_types) and all(p.complete for p in self.page_types.values())

    @property
    def failed_fields(self) -> dict[str, list[str]]:
        return {
            name: result.failed_fields
            for name, result in self.page_types.items()
            if result.failed_fields
        }

    def problems(self, limit: int = 3) -> list[str]:
        lines = []
        for name, result in self.page_types.items():
            if result.complete:
                continue
            parts = list(result.errors[:limit])
            if result.invalid:
                parts.append(f"{len(result.invalid)} invalid item(s)")
            if result.lost_fields:
                parts.append("fields lost: " + ", ".join(result.lost_fields))
            if result.lost_card_fields:
                parts.append("card fields lost: " + ", ".join(result.lost_card_fields))
            lines.append(f"{name}: " + "; ".join(parts))
        return lines

    def describe(self) -> str:
        counts = ", ".join(
            f"{name} {r.items} item(s)/{r.requests} link(s) from {r.pages} page(s)"
            for name, r in self.page_types.items()
        )
        return counts + (f" ({self.coverage_note})" if self.coverage_note else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "complete": self.complete,
            "page_types": {k: v.to_dict() for k, v in self.page_types.items()},
            "lost_fields": list(self.lost),
            "failed_fields": self.failed_fields,
            "coverage_note": self.coverage_note,
        }


def judge_extraction(
    outputs: Sequence[PageOutput],
    coverage: CoverageBaseline | None,
    cards: Mapping[str, CoverageBaseline] | None = None,
) -> ExtractionReport:
    """Complete: every page yielded, nothing raised, every item valid, no field lost
    (a field a page does not show is absent there, not lost), no card field lost.

    ``cards``: page type -> the fill rates of its cards (``card_baselines``)."""
    pages = [PageItems(output.items, output.evidence) for output in outputs]
    lost = judge_lost(pages, coverage) if coverage else ()
    by_type: dict[str, list[PageOutput]] = {}
    for output in outputs:
        by_type.setdefault(output.page_type, []).append(output)
    expected = tuple(
        name
        for name, expectation in sorted((coverage.fields if coverage else {}).items())
        if expectation.rate >= EXPECTED_RATE and name not in HARNESS_FIELDS
    )
    results = {
        name: replace(
            _judge_type(name, group, lost, (cards or {}).get(name)), expected_fields=expected
        )
        for name, group in by_type.items()
    }
    note = "" if coverage else "no coverage baseline: items judged by their schema only"
    return ExtractionReport(results, lost, note)


def _judge_type(
    name: str,
    outputs: Sequence[PageOutput],
    lost: Iterable[str],
    card_baseline: CoverageBaseline | None = None,
) -> PageTypeExtraction:
    errors: list[str] = []
    invalid: list[Mapping[str, Any]] = []
    items: list[Any] = []
    for output in outputs:
        errors += output.errors
        # A listing page's data is its requests for the detail pages: its pagination alone
        # is no proof that the listing still reads its cards.
        if not output.errors and not output.items and output.requests <= output.pagination:
            what = "nothing" if not output.requests else "only its own pagination"
            errors.append(f"{output.url}: the callback yielded {what}")
        for item in output.items:
            items.append(item)
            problems = _item_errors(item)
            if problems:
                invalid.append({"url": output.url, "errors": problems})
    # A field lost over the sample is this page type's loss when none of its items has it,
    # or when one of its pages shows the field and none of that page's items has it.
    own_pages = [PageItems(output.items, output.evidence) for output in outputs]
    own_lost = tuple(
        f
        for f in lost
        if items and (not filled_anywhere(items, f) or any(missed(page, f) for page in own_pages))
    )
    # A listing's data is its cards: a card field its fixtures fill, empty on every card.
    cards = [card for output in outputs for card in output.cards]
    lost_cards = (
        tuple(drop.field for drop in lost_fields(cards, card_baseline))
        if cards and card_baseline is not None
        else ()
    )
    return PageTypeExtraction(
        page_type=name,
        callback=outputs[0].callback,
        pages=len(outputs),
        items=len(items),
        requests=sum(o.requests for o in outputs),
        invalid=tuple(invalid),
        lost_fields=own_lost,
        errors=tuple(errors),
        cards=len(cards),
        lost_card_fields=lost_cards,
    )


def _item_errors(item: Any) -> list[str]:
    try:
        validation = schema_for(item).validate(item)
    except UnknownItemType as exc:
        return [f"_item: {exc}"]
    return [str(error) for error in validation.errors]


def card_baselines(
    site: str, outputs: Sequence[PageOutput], supplied: Iterable[str] = ()
) -> dict[str, CoverageBaseline]:
    """Page type -> the fill rates of the cards its callback reads on ``outputs`` (the
    site's fixtures): what a sample's cards are judged against. Types without cards have
    none. ``supplied``: fields the cards' own pages fill on their own (a hotel page's
    coordinates), which the item gets whatever its card lacks: not judged on the cards."""
    by_type: dict[str, list[Any]] = {}
    skip = set(supplied) | HARNESS_FIELDS
    for output in outputs:
        by_type.setdefault(output.page_type, []).extend(
            {k: v for k, v in ItemAdapter(card).items() if k not in skip} for card in output.cards
        )
    # Cards vary with the search (a sample's cards are other properties than the
    # fixtures'), so their rates are no baseline for drops: only a field its fixtures
    # fill that is empty on every sampled card is lost (``lost_fields``' small-sample rule).
    return {
        name: CoverageBaseline.from_items(f"{site}:{name} cards", cards, min_items=CARD_NO_DROPS)
        for name, cards in by_type.items()
        if cards
    }


def filled_anywhere(items: Sequence[Any], name: str) -> bool:
    """Whether any of ``items`` fills field ``name`` (``fingerprints.coverage.is_filled``)."""
    return any(is_filled(ItemAdapter(item).get(name)) for item in items)
