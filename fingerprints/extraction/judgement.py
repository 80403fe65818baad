"""Is the data complete? The judgement of the site's callbacks' outputs on a sample, pure:
outputs (``fingerprints.extraction.callbacks.run_callbacks``) and the page types' baselines
in, a report out.

Per page type: every page yielded items or requests other than its own pagination (a
listing's detail pages), no callback failed, every item validates against its schema
(``core.items_schema``), and no field *fell* (``fingerprints.extraction.fields``): on each
layer of records (the items; the cards of a listing; the same cards read from the visible
page alone), each field's rate among the records expected to have it
(``fingerprints.extraction.evidence``: absent is not lost) against the same rate on the
site's own fixtures of that page type (``page_type_baselines``). A required field's fall
breaks extraction; another's is a warning with the figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.items_schema import UnknownItemType
from crawlers.items import schema_for
from fingerprints.baselines.coverage import CoverageBaseline
from fingerprints.extraction.callbacks import HARNESS_FIELDS, PageOutput
from fingerprints.extraction.evidence import PageEvidence, Tally, absent_fields, tallies, tally
from fingerprints.extraction.fields import (
    CARDS,
    ITEMS,
    LAYERS,
    VISIBLE,
    FieldFall,
    FieldPolicy,
    baseline_rates,
    falls,
)

MAX_INVALID_SHOWN = 5
# A failed page type without items failed on every field the baseline fills this often.
EXPECTED_RATE = 0.5
# Layer -> field -> rate where expected: one page type's baseline.
Baselines = Mapping[str, Mapping[str, float]]


@dataclass(frozen=True)
class PageTypeExtraction:
    page_type: str
    callback: str | None
    pages: int
    items: int
    requests: int
    invalid: tuple[Mapping[str, Any], ...] = ()  # {"url", "errors": [...]}
    errors: tuple[str, ...] = ()
    expected_fields: tuple[str, ...] = ()  # the items baseline's (for a failed type)
    cards: int = 0
    visible_cards: int | None = None
    falls: tuple[FieldFall, ...] = ()  # fields below the floor of their baseline
    notes: tuple[str, ...] = ()  # warnings that are no field's fall
    unjudged: int = 0  # pages not judged: their parts need the network
    absent: tuple[str, ...] = ()  # fields with evidence rules no sampled page has

    @property
    def lost_fields(self) -> tuple[str, ...]:
        """Required fields that fell on the items."""
        return _names(f for f in self.falls if f.required and f.layer == ITEMS)

    @property
    def lost_card_fields(self) -> tuple[str, ...]:
        """Required fields that fell on the cards (with or without the embedded data)."""
        return _names(f for f in self.falls if f.required and f.layer != ITEMS)

    @property
    def drifted_fields(self) -> tuple[str, ...]:
        return _names(f for f in self.falls if not f.required)

    @property
    def failed(self) -> bool:
        """The callback raised, yielded nothing, or yielded invalid items."""
        return bool(self.errors or self.invalid)

    @property
    def broken(self) -> bool:
        """A required field fell."""
        return any(f.required for f in self.falls)

    @property
    def complete(self) -> bool:
        return not self.failed and not self.broken

    @property
    def failed_fields(self) -> list[str]:
        """Fields lost on this page type's records or invalid on one of them; when it
        failed without yielding a single item, every field the items baseline expects."""
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

    def warnings(self) -> list[str]:
        return [str(f) for f in self.falls if not f.required] + list(self.notes)

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
            "visible_cards": self.visible_cards,
            "lost_card_fields": list(self.lost_card_fields),
            "drifted_fields": list(self.drifted_fields),
            "falls": [f.to_dict() for f in self.falls],
            "notes": list(self.notes),
            "unjudged_pages": self.unjudged,
            "absent_fields": list(self.absent),
            "errors": list(self.errors),
        }


def _names(found: Iterable[FieldFall]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(f.field for f in found))


@dataclass(frozen=True)
class ExtractionReport:
    page_types: Mapping[str, PageTypeExtraction] = field(default_factory=dict)
    coverage_note: str = ""  # e.g. a page type judged by coverage.json's rates

    @property
    def complete(self) -> bool:
        return bool(self.page_types) and all(p.complete for p in self.page_types.values())

    @property
    def failed(self) -> bool:
        return any(p.failed for p in self.page_types.values())

    @property
    def broken(self) -> bool:
        return any(p.broken for p in self.page_types.values())

    @property
    def lost(self) -> tuple[str, ...]:
        """Every required field that fell, on any page type and layer."""
        return tuple(
            dict.fromkeys(f.field for p in self.page_types.values() for f in p.falls if f.required)
        )

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
            required = [str(f) for f in result.falls if f.required]
            if required:
                parts.append("required fields fell: " + "; ".join(required))
            lines.append(f"{name}: " + "; ".join(parts))
        return lines

    def warnings(self) -> list[str]:
        return [f"{name}: {line}" for name, r in self.page_types.items() for line in r.warnings()]

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
            "warnings": self.warnings(),
            "coverage_note": self.coverage_note,
        }


# -- the baselines: the same layers on the site's own fixtures -----------------------------------


def _layers(outputs: Sequence[PageOutput]) -> dict[str, list[tuple[Sequence[Any], PageEvidence]]]:
    groups: dict[str, list[tuple[Sequence[Any], PageEvidence]]] = {layer: [] for layer in LAYERS}
    for output in outputs:
        groups[ITEMS] += output.item_groups()
        groups[CARDS].append((output.cards, output.evidence))
        if output.visible_cards is not None:
            groups[VISIBLE].append((output.visible_cards, output.evidence))
    return groups


def page_type_baselines(
    fixtures: Sequence[PageOutput],
    coverage: CoverageBaseline | None = None,
    supplied: Iterable[str] = (),
) -> dict[str, dict[str, dict[str, float]]]:
    """Page type -> layer -> field -> the rate its fixtures fill it at where expected.

    ``supplied``: fields the cards' own pages fill on their own (a hotel page's
    coordinates), which an item gets whatever its card lacks: not judged on cards. A page
    type whose fixtures yield no item offline (its items wait for parts from the network)
    is judged by ``coverage`` (the site's coverage.json) on its items, when there is one."""
    by_type: dict[str, list[PageOutput]] = {}
    for output in fixtures:
        by_type.setdefault(output.page_type, []).append(output)
    result: dict[str, dict[str, dict[str, float]]] = {}
    skip_cards = set(supplied) | HARNESS_FIELDS
    for name, outputs in by_type.items():
        groups = _layers(outputs)
        rates = {
            ITEMS: baseline_rates(tallies(groups[ITEMS]), HARNESS_FIELDS),
            CARDS: baseline_rates(tallies(groups[CARDS]), skip_cards),
            VISIBLE: baseline_rates(tallies(groups[VISIBLE]), skip_cards),
        }
        waiting = any(o.unfetched for o in outputs) and not any(o.items for o in outputs)
        if waiting and coverage is not None:
            rates[ITEMS] = {
                field_name: e.rate
                for field_name, e in coverage.fields.items()
                if e.rate > 0 and field_name not in HARNESS_FIELDS
            }
        result[name] = {layer: found for layer, found in rates.items() if found}
    return result


# -- the judgement --------------------------------------------------------------------------------


def judge_extraction(
    outputs: Sequence[PageOutput],
    baselines: Mapping[str, Baselines] | None = None,
    policy: FieldPolicy | None = None,
    *,
    parts_required: bool = True,
    note: str = "",
) -> ExtractionReport:
    """Complete: every page yielded, nothing raised, every item valid, no required field
    fell on any layer (a field a page lacks is absent there, not lost).

    ``baselines``: page type -> layer -> field -> rate (``page_type_baselines``); a page
    type without one is judged on its schema and outputs only. ``parts_required``: a
    page whose parts could not be fetched fails (False: it is left out, unjudged, as in
    the fixture check of a structure that matches: nothing there is new)."""
    policy = policy or FieldPolicy()
    by_type: dict[str, list[PageOutput]] = {}
    for output in outputs:
        by_type.setdefault(output.page_type, []).append(output)
    results = {
        name: _judge_type(name, group, (baselines or {}).get(name, {}), policy, parts_required)
        for name, group in by_type.items()
    }
    return ExtractionReport(results, note)


def _judge_type(
    name: str,
    outputs: Sequence[PageOutput],
    baseline: Baselines,
    policy: FieldPolicy,
    parts_required: bool,
) -> PageTypeExtraction:
    errors: list[str] = []
    invalid: list[Mapping[str, Any]] = []
    judged: list[PageOutput] = []
    unjudged = 0
    for output in outputs:
        if output.unfetched and not parts_required:
            unjudged += 1
            continue
        judged.append(output)
        errors += output.errors + output.unfetched
        # A listing page's data is its requests for the detail pages: its pagination alone
        # is no proof that the listing still reads its cards.
        empty = not output.items and output.requests <= output.pagination
        # A page that says it has no record (a business nobody reviewed yet) lost none.
        if not output.errors and not output.unfetched and empty and not output.evidence.empty:
            what = "nothing" if not output.requests else "only its own pagination"
            errors.append(f"{output.url}: the callback yielded {what}")
        for group, evidence in output.item_groups():
            for item in group:
                problems = [e for e in _item_errors(item) if not _absent(item, evidence, e)]
                if problems:
                    invalid.append({"url": output.url, "errors": problems})
    groups = _layers(judged)
    found: list[FieldFall] = []
    for layer in LAYERS:
        records = [record for chunk, _ in groups[layer] for record in chunk]
        if records and baseline.get(layer):
            found += falls(tallies(groups[layer]), baseline[layer], layer, policy)
    notes = _visible_notes(judged, baseline)
    items = sum(len(o.items) for o in judged)
    expected = tuple(
        sorted(f for f, rate in baseline.get(ITEMS, {}).items() if rate >= EXPECTED_RATE)
    )
    visible = [o.visible_cards for o in judged if o.visible_cards is not None]
    return PageTypeExtraction(
        page_type=name,
        callback=outputs[0].callback,
        pages=len(judged),
        items=items,
        requests=sum(o.requests for o in judged),
        invalid=tuple(invalid),
        errors=tuple(errors),
        expected_fields=expected,
        cards=sum(len(o.cards) for o in judged),
        visible_cards=sum(len(v) for v in visible) if visible else None,
        falls=tuple(found),
        notes=notes,
        unjudged=unjudged,
        absent=absent_fields([*groups[ITEMS], *groups[CARDS]]),
    )


def _visible_notes(outputs: Sequence[PageOutput], baseline: Baselines) -> tuple[str, ...]:
    """A listing whose fixtures show their cards but whose sample's cards come from its
    embedded data alone: what users see is no longer read (a warning: the data is there)."""
    if not baseline.get(VISIBLE):
        return ()
    cards = sum(len(o.cards) for o in outputs if o.visible_cards is not None)
    seen = sum(len(o.visible_cards or ()) for o in outputs)
    if cards and not seen:
        return (f"no card read from the visible page ({cards} from the embedded data only)",)
    return ()


def _absent(item: Any, evidence: PageEvidence, error: str) -> bool:
    """A required field missing where the page says it lacks it (a price "on request"):
    the item is what the page offers, not a reading error."""
    name = error.split(":", 1)[0].split(".", 1)[0]
    return evidence.ruled(name) and tally([item], evidence, name).expected == 0


def _item_errors(item: Any) -> list[str]:
    try:
        validation = schema_for(item).validate(item)
    except UnknownItemType as exc:
        return [f"_item: {exc}"]
    return [str(error) for error in validation.errors]


def sample_tallies(outputs: Sequence[PageOutput], layer: str = ITEMS) -> dict[str, Tally]:
    """Field -> tally of one layer of ``outputs`` (for reports and tools)."""
    return tallies(_layers(outputs)[layer])
