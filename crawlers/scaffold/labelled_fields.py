"""Fields of the generic item type named by the site's own labels: a site of no known kind
("Venue: ...", "Prep time: ...", "Duration: ...") keeps what it labels, each field named
after its label (``prep_time``), never after a CSS class. Pure functions."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from crawlers.scaffold.fields import PLATFORM, FieldProposal
from crawlers.scaffold.item_types import full_declaration, register_declared
from crawlers.scaffold.labels import ALL_FIELDS, field_for
from crawlers.scaffold.synth import Unit, choose, read
from crawlers.spiders.rules import Reading

__all__ = ["label_name", "labelled_fields"]

MOST = 0.5  # share of the units a label must be on


def label_name(label: str) -> str | None:
    """``Prep time:`` -> ``prep_time`` (ASCII, lower case; None: nothing left)."""
    plain = unicodedata.normalize("NFKD", label).encode("ascii", "ignore").decode()
    name = re.sub(r"[^a-z0-9]+", "_", plain.lower()).strip("_")[:30].strip("_")
    return name if name and name[0].isalpha() else None


def labelled_fields(
    units: Sequence[Unit],
    seen: Sequence[Mapping[str, Any]],
    taken: Mapping[str, FieldProposal],
    reading: Reading,
) -> tuple[dict[str, FieldProposal], dict[str, dict[str, Any]]]:
    """(field -> its proposal, field -> its [item_fields] entry) for the labels most units
    show that name no platform field."""
    by_name: dict[str, list[Any]] = {}
    for index, unit_seen in enumerate(seen):
        for pair in unit_seen["labels"]:
            if field_for(pair.label, ALL_FIELDS):
                continue
            name = label_name(pair.label)
            if name and name not in taken and name not in PLATFORM:
                by_name.setdefault(name, [None] * len(units))[index] = pair
    kept = {
        n: pairs
        for n, pairs in by_name.items()
        if sum(p is not None for p in pairs) >= MOST * len(units)
    }
    if not kept:
        return {}, {}
    declaration = full_declaration("item") | {name: {"type": "text"} for name in kept}
    register_declared("item", declaration)
    proposals, entries = {}, {}
    for name, pairs in kept.items():
        expected = [
            read(unit, "item", name, pair.exact, reading) if pair is not None else None
            for unit, pair in zip(units, pairs, strict=True)
        ]
        proposed = [list(pair.rules) if pair is not None else [] for pair in pairs]
        choice = choose(name, "item", units, expected, proposed, reading)
        proposals[name] = FieldProposal(name, choice, ["label"])
        if choice.sure:
            entries[name] = {"type": "text"}
    return proposals, entries
