"""Field coverage at job end: did a field stop being filled? (Spidermon-style.)

The structure gate looks at pages before a scrape; this looks at the items after it.
A selector that silently stops matching leaves the page structure intact but empties a
field on some or all items. For each field, the job's fill rate (share of items where
it is not None, "", whitespace, [] or {}) is compared with the site's baseline
(``fingerprints/sites/<site>/coverage.json``); a drop larger than the tolerance, or a
field that vanished entirely, is reported.

Rates move a little from job to job with the content (a product without reviews), so the
tolerance is an absolute drop in the rate: 0.10 by default, per field if needed. With
fewer than ``min_items`` items the rates are too noisy to judge and the report says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from itemadapter import ItemAdapter

from fingerprints.baselines.store import COVERAGE_FILE, SITES_DIR, BaselineError, dumps, site_dir

DEFAULT_TOLERANCE = 0.10
DEFAULT_MIN_ITEMS = 20
# A field that was filled on at least this share of items and now on none has vanished,
# whatever its tolerance: the typical broken selector on a rarely filled field.
VANISHED_MIN_RATE = 0.02
# A gate's sample has a handful of items, too few for fill rates: there a field counts as
# lost when it is empty on every sampled item and the baseline's rate makes such a run
# of empties less likely than this by chance ((1 - rate) ** items).
LOST_SIGNIFICANCE = 0.05


def is_filled(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, list | tuple | dict | set | frozenset):
        return len(value) > 0
    return True


def fill_rates(items: Iterable[Any], fields: Iterable[str] = ()) -> tuple[int, dict[str, float]]:
    """(item count, field -> fill rate) over every field seen or named in ``fields``."""
    filled: dict[str, int] = dict.fromkeys(fields, 0)
    total = 0
    for item in items:
        total += 1
        adapter = ItemAdapter(item)  # dicts, dataclasses, attrs and Scrapy Items alike
        for name in adapter.field_names():
            filled.setdefault(name, 0)
            if is_filled(adapter.get(name)):
                filled[name] += 1
    rates = {name: (count / total if total else 0.0) for name, count in sorted(filled.items())}
    return total, rates


@dataclass(frozen=True)
class FieldExpectation:
    rate: float
    tolerance: float | None = None  # None: the baseline's default
    # The rate among the items whose pages show the field (fingerprints.extraction.evidence), when
    # some pages lack it (a hotel without reviews has no score): None, the same as rate.
    when_shown: float | None = None


@dataclass(frozen=True)
class CoverageBaseline:
    site: str
    fields: Mapping[str, FieldExpectation]
    tolerance: float = DEFAULT_TOLERANCE
    min_items: int = DEFAULT_MIN_ITEMS
    items: int = 0  # how many items the rates were measured on

    def tolerance_for(self, name: str) -> float:
        expectation = self.fields.get(name)
        if expectation is not None and expectation.tolerance is not None:
            return expectation.tolerance
        return self.tolerance

    @classmethod
    def from_items(
        cls,
        site: str,
        items: Iterable[Any],
        *,
        tolerance: float = DEFAULT_TOLERANCE,
        min_items: int = DEFAULT_MIN_ITEMS,
    ) -> CoverageBaseline:
        total, rates = fill_rates(items)
        if total == 0:
            raise BaselineError(f"{site}: no items to compute a coverage baseline from")
        fields = {name: FieldExpectation(round(rate, 4)) for name, rate in rates.items()}
        return cls(site, fields, tolerance, min_items, total)

    def to_dict(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "items": self.items,
            "tolerance": self.tolerance,
            "min_items": self.min_items,
            "fields": {
                name: {"rate": e.rate}
                | ({"tolerance": e.tolerance} if e.tolerance is not None else {})
                | ({"when_shown": e.when_shown} if e.when_shown is not None else {})
                for name, e in sorted(self.fields.items())
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "<coverage>") -> CoverageBaseline:
        try:
            fields = {
                str(name): FieldExpectation(
                    float(entry["rate"]),
                    entry.get("tolerance"),
                    None if entry.get("when_shown") is None else float(entry["when_shown"]),
                )
                for name, entry in data["fields"].items()
            }
            return cls(
                site=str(data["site"]),
                fields=fields,
                tolerance=float(data.get("tolerance", DEFAULT_TOLERANCE)),
                min_items=int(data.get("min_items", DEFAULT_MIN_ITEMS)),
                items=int(data.get("items", 0)),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BaselineError(f"{source}: malformed coverage baseline ({exc!r})") from exc


@dataclass(frozen=True)
class FieldDrop:
    field: str
    expected: float
    actual: float
    tolerance: float

    @property
    def drop(self) -> float:
        return self.expected - self.actual

    def __str__(self) -> str:
        return (
            f"{self.field}: filled on {self.actual:.1%} of items, baseline {self.expected:.1%} "
            f"(drop {self.drop:.1%} > tolerance {self.tolerance:.1%})"
            if self.actual > 0
            else f"{self.field}: filled on no item, baseline {self.expected:.1%} (vanished)"
        )


@dataclass(frozen=True)
class CoverageReport:
    site: str
    items: int
    rates: Mapping[str, float]
    drops: tuple[FieldDrop, ...] = ()
    new_fields: tuple[str, ...] = ()  # filled now, unknown to the baseline (informational)
    problems: tuple[str, ...] = ()  # no baseline, too few items: no verdict possible
    # The baseline's rate per field; None when the site has no coverage.json (the rates
    # are then only measured, never judged).
    expected: Mapping[str, float] | None = None

    @property
    def ok(self) -> bool:
        return not self.drops and not self.problems

    @property
    def dropped_fields(self) -> list[str]:
        return [d.field for d in self.drops]

    def summary(self) -> str:
        verdict = "ok" if self.ok else "PROBLEMS"
        lines = [f"{self.site}: field coverage {verdict} ({self.items} items)"]
        lines += [f"- {problem}" for problem in self.problems]
        lines += [f"- {drop}" for drop in self.drops]
        if self.new_fields:
            lines.append(f"- new fields (not in the baseline): {', '.join(self.new_fields)}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "ok": self.ok,
            "items": self.items,
            "rates": {k: round(v, 4) for k, v in self.rates.items()},
            "drops": [
                {
                    "field": d.field,
                    "expected": d.expected,
                    "actual": round(d.actual, 4),
                    "tolerance": d.tolerance,
                }
                for d in self.drops
            ],
            "new_fields": list(self.new_fields),
            "problems": list(self.problems),
            "expected": None if self.expected is None else dict(self.expected),
        }


def compare_coverage(items: Iterable[Any], baseline: CoverageBaseline) -> CoverageReport:
    total, rates = fill_rates(items, baseline.fields)
    expected = {name: e.rate for name, e in sorted(baseline.fields.items())}
    if total < baseline.min_items:
        problem = (
            f"only {total} item(s), fewer than the {baseline.min_items} needed to judge fill rates"
        )
        return CoverageReport(baseline.site, total, rates, problems=(problem,), expected=expected)
    drops = []
    for name, expectation in sorted(baseline.fields.items()):
        actual = rates.get(name, 0.0)
        tolerance = baseline.tolerance_for(name)
        dropped = expectation.rate - actual > tolerance
        vanished = actual == 0 and expectation.rate >= VANISHED_MIN_RATE
        if dropped or vanished:
            drops.append(FieldDrop(name, expectation.rate, actual, tolerance))
    new = tuple(n for n, r in rates.items() if n not in baseline.fields and r > 0)
    return CoverageReport(baseline.site, total, rates, tuple(drops), new, expected=expected)


def lost_fields(
    items: Iterable[Any], baseline: CoverageBaseline, significance: float = LOST_SIGNIFICANCE
) -> tuple[FieldDrop, ...]:
    """The baseline's fields a sample lost (the gate's check of a drifted sample).

    A small sample (fewer than ``min_items``) loses a field only when the field is empty
    on every item and chance explains that less than ``significance`` of the time; a
    large one is judged by ``compare_coverage``'s drops as well.
    """
    items = list(items)
    total, rates = fill_rates(items, baseline.fields)
    if total == 0:
        return ()
    lost = {
        name: FieldDrop(name, expectation.rate, 0.0, baseline.tolerance_for(name))
        for name, expectation in sorted(baseline.fields.items())
        if rates.get(name, 0.0) == 0 and (1 - expectation.rate) ** total < significance
    }
    if total >= baseline.min_items:
        lost |= {drop.field: drop for drop in compare_coverage(items, baseline).drops}
    return tuple(lost[name] for name in sorted(lost))


def coverage_path(site: str, sites_dir: Path = SITES_DIR) -> Path:
    return site_dir(site, sites_dir) / COVERAGE_FILE


def load_coverage_baseline(site: str, sites_dir: Path = SITES_DIR) -> CoverageBaseline:
    path = coverage_path(site, sites_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise BaselineError(f"no coverage baseline for site {site!r}: expected {path}") from exc
    except ValueError as exc:
        raise BaselineError(f"{path}: not JSON ({exc})") from exc
    return CoverageBaseline.from_dict(data, source=str(path))


def save_coverage_baseline(baseline: CoverageBaseline, sites_dir: Path = SITES_DIR) -> Path:
    path = coverage_path(baseline.site, sites_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(baseline.to_dict()), encoding="utf-8")
    return path


def check_coverage(
    site: str, items: Iterable[Any], *, sites_dir: Path = SITES_DIR
) -> CoverageReport:
    """The job-end check for the flows: never raises for a missing/bad baseline."""
    try:
        baseline = load_coverage_baseline(site, sites_dir)
    except BaselineError as exc:
        return CoverageReport(site, 0, {}, problems=(str(exc),))
    return compare_coverage(items, baseline)


def job_end_coverage(
    site: str,
    items: Iterable[Any],
    *,
    fields: Iterable[str] = (),
    sites_dir: Path = SITES_DIR,
) -> CoverageReport:
    """What the scrape flow's report shows: the job's fill rates against the site's
    ``coverage.json`` when it has one; without one, the measured rates alone (``expected``
    None, no verdict: nothing to compare with). ``fields``: every field the item type
    has, so a field no item filled shows as 0. Never raises for a bad baseline (it is
    named in ``problems``)."""
    if not coverage_path(site, sites_dir).is_file():
        total, rates = fill_rates(items, fields)
        return CoverageReport(site, total, rates)
    try:
        baseline = load_coverage_baseline(site, sites_dir)
    except BaselineError as exc:
        total, rates = fill_rates(items, fields)
        return CoverageReport(site, total, rates, problems=(str(exc),))
    return compare_coverage(items, baseline)
