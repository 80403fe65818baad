"""Did a field fall? Each field's fill rate on the gate's sample against its baseline, pure.

The gate judges the items of every run, whatever the structure says (a layout that still
matches can stop giving a price). Per page type and per *layer* of records (the items a
page yields; the cards of a listing, as read with the page's embedded data; the same
cards read from the visible page alone), each field's rate is the share of the records
expected to have it (``fingerprints.extraction.evidence``: absent is not lost) that have it. The
baseline is the same rate on the site's own fixtures of that page type.

A field *falls* when its rate on the sample is below ``floor`` times its baseline rate and
chance explains so few filled records less than ``SIGNIFICANCE`` of the time (the
binomial probability of at most that many at the baseline rate): a field the baseline
fills on every record falls as soon as the sample fills less than the floor of it; one
filled on half the records needs a larger sample. A fall of a *required* field (the
profile's ``[fingerprint] required``) stops the run; any other is a warning with the
figure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from fingerprints.extraction.evidence import Tally

DEFAULT_FLOOR = 0.8
SIGNIFICANCE = 0.05
# The layers of records a page type is judged on.
ITEMS = "items"
CARDS = "cards"
VISIBLE = "visible cards"  # the cards read without the page's embedded data (scripts)
LAYERS = (ITEMS, CARDS, VISIBLE)


@dataclass(frozen=True)
class FieldPolicy:
    """What the site asks of its fields: which ones it is scraped for, and the floor."""

    required: frozenset[str] = frozenset()
    floor: float = DEFAULT_FLOOR
    significance: float = SIGNIFICANCE


@dataclass(frozen=True)
class FieldFall:
    """A field whose rate fell below the floor of its baseline on one layer."""

    field: str
    layer: str
    filled: int
    expected: int
    baseline: float
    required: bool

    @property
    def rate(self) -> float:
        return self.filled / self.expected if self.expected else 0.0

    def __str__(self) -> str:
        return (
            f"{self.field}: {self.filled} of {self.expected} {self.layer} ({self.rate:.1%}), "
            f"baseline {self.baseline:.1%}"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "field": self.field,
            "layer": self.layer,
            "filled": self.filled,
            "expected": self.expected,
            "rate": round(self.rate, 4),
            "baseline": round(self.baseline, 4),
            "required": self.required,
        }


def baseline_rates(totals: Mapping[str, Tally], skip: Iterable[str] = ()) -> dict[str, float]:
    """Field -> its rate where expected, for the fields the baseline fills at all."""
    skipped = set(skip)
    return {
        name: round(total.filled / total.expected, 4)
        for name, total in sorted(totals.items())
        if name not in skipped and total.expected and total.filled
    }


def chance(filled: int, expected: int, rate: float) -> float:
    """The probability of at most ``filled`` of ``expected`` records at ``rate``."""
    if rate >= 1.0:
        return 1.0 if filled >= expected else 0.0
    return sum(
        math.comb(expected, k) * rate**k * (1 - rate) ** (expected - k) for k in range(filled + 1)
    )


def falls(
    totals: Mapping[str, Tally],
    baseline: Mapping[str, float],
    layer: str,
    policy: FieldPolicy,
) -> tuple[FieldFall, ...]:
    """The baseline's fields that fell on the sample's records of one layer."""
    found = []
    for name, rate in sorted(baseline.items()):
        total = totals.get(name, Tally())
        if not total.expected or rate <= 0:
            continue  # nothing on the sample is expected to have it: absent, not lost
        low = total.filled < policy.floor * rate * total.expected
        if low and chance(total.filled, total.expected, rate) < policy.significance:
            found.append(
                FieldFall(name, layer, total.filled, total.expected, rate, name in policy.required)
            )
    return tuple(found)
