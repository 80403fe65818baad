"""Rules that generalise: of the rules proposed for a field on each sampled page (or card),
the one that reads, on the most units, the value the field's finder saw there, and
nothing else where it saw another, measured with the generic spider's own rules engine
(crawlers.spiders.rules). A second rule falls back where the first finds nothing.

A unit is a page (one item per page) or a card of a list (its rules read within it)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from crawlers.profile_schema import PageTable
from crawlers.scaffold.page import Page
from crawlers.spiders.rules import Reading, read_page

__all__ = ["Choice", "Unit", "choose", "read", "same"]

AGREE = 0.8  # share of the units with a value where the chosen rule must read it
MAX_CANDIDATES = 16


@dataclass(frozen=True, eq=False)
class Unit:
    """What one item is read from: a page, or a card on it (``root``)."""

    page: Page
    root: Any  # the page's selector, or the card element

    @property
    def is_page(self) -> bool:
        return self.root.root.tag == "html"


@dataclass
class Choice:
    """The rules chosen for a field, in the order the engine tries them, and how well
    they read the finder's values: ``found`` units with a value, ``agree`` of them read
    right by the rules, ``wrong`` read otherwise, ``extra`` read where none was seen."""

    rules: list[dict[str, Any]]
    found: int
    agree: int
    wrong: int = 0
    extra: int = 0
    units: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def sure(self) -> bool:
        return bool(self.rules) and self.found > 0 and self.agree >= AGREE * self.found

    @property
    def share(self) -> float:
        return self.agree / self.found if self.found else 0.0


def read(
    unit: Unit,
    item_type: str,
    name: str,
    rule: Mapping[str, Any],
    reading: Reading,
    schema: str | None = None,
) -> Any:
    """What ``rule`` reads for field ``name`` on ``unit``: the engine's converted value
    (None: nothing, or a value that does not convert). ``schema``: the item node's
    schema.org type, for ``data`` rules."""
    table = _table(name, _key(rule), rule, schema)
    if table is None:
        return None
    try:
        root = None if unit.is_page else unit.root
        done = read_page(unit.page.response, table, item_type, reading, root=root)
    except (ValueError, KeyError, TypeError):  # an XPath or CSS the engine refuses
        return None
    return done.fields.get(name)


def same(a: Any, b: Any) -> bool:
    """Two read values are the same (numbers within rounding, texts as written)."""
    if a is None or b is None:
        return False
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-6)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def choose(
    name: str,
    item_type: str,
    units: Sequence[Unit],
    expected: Sequence[Any],
    proposed: Sequence[Sequence[Mapping[str, Any]]],
    reading: Reading,
    schema: str | None = None,
) -> Choice:
    """The rules for ``name``: ``expected[i]`` is the value seen on ``units[i]`` (None:
    none), ``proposed[i]`` the rules proposed there. Candidates proposed on more units are
    tried first; a candidate reading a wrong value on a unit loses more than one reading
    nothing there."""
    found = sum(value is not None for value in expected)
    counted: Counter[str] = Counter()
    rules: dict[str, Mapping[str, Any]] = {}
    for here in proposed:
        for rule in {_key(r): r for r in here}.values():
            counted[_key(rule)] += 1
            rules.setdefault(_key(rule), rule)
    ranked = [rules[key] for key, _ in counted.most_common(MAX_CANDIDATES)]
    results = []
    for rule in ranked:
        values = [read(unit, item_type, name, rule, reading, schema) for unit in units]
        results.append((rule, values))
    best = _best(results, expected)
    if best is None:
        return Choice([], found, 0, units=len(units))
    rule, values = best
    chosen = [dict(rule)]
    misses = [i for i, v in enumerate(values) if v is None and expected[i] is not None]
    if misses:
        # A fallback for the units the first rule misses, wrong nowhere.
        rest = [(r, vs) for r, vs in results if r is not rule]
        fallback = _best(rest, [expected[i] if i in misses else None for i in range(len(units))])
        if fallback is not None and not _wrong(fallback[1], expected):
            chosen.append(dict(fallback[0]))
            values = [v if v is not None else fallback[1][i] for i, v in enumerate(values)]
    elif "data" in chosen[0]:
        # Structured data first, and the element showing the same value after it: the
        # page keeps being read if its structured data goes, and the gate watches it.
        shown = [(r, vs) for r, vs in results if "data" not in r and not _wrong(vs, expected)]
        agreeing = [(r, vs) for r, vs in shown if _agree(vs, expected) >= AGREE * max(1, found)]
        if agreeing:
            chosen.append(dict(max(agreeing, key=lambda rv: _agree(rv[1], expected))[0]))
    return _choice(chosen, values, expected, len(units))


def _agree(values: Sequence[Any], expected: Sequence[Any]) -> int:
    return sum(same(v, e) for v, e in zip(values, expected, strict=True))


def _key(rule: Mapping[str, Any]) -> str:
    return repr(sorted((k, repr(v)) for k, v in rule.items()))


_TABLES: dict[tuple[str, str, str | None], PageTable | None] = {}


def _table(name: str, key: str, rule: Mapping[str, Any], schema: str | None) -> PageTable | None:
    """The one-field page table of a rule (built once: rules repeat over units)."""
    cache = (name, key, schema)
    if cache not in _TABLES:
        try:
            _TABLES[cache] = PageTable.model_validate(
                {"item": schema, "fields": {name: [dict(rule)]}}
            )
        except ValidationError:
            _TABLES[cache] = None
    return _TABLES[cache]


def _score(values: Sequence[Any], expected: Sequence[Any]) -> float:
    agree = sum(same(v, e) for v, e in zip(values, expected, strict=True))
    wrong = sum(
        v is not None and e is not None and not same(v, e)
        for v, e in zip(values, expected, strict=True)
    )
    extra = sum(v is not None and e is None for v, e in zip(values, expected, strict=True))
    return agree - 2 * wrong - 0.25 * extra


def _wrong(values: Sequence[Any], expected: Sequence[Any]) -> bool:
    return any(
        v is not None and e is not None and not same(v, e)
        for v, e in zip(values, expected, strict=True)
    )


def _best(
    results: Sequence[tuple[Mapping[str, Any], list[Any]]], expected: Sequence[Any]
) -> tuple[Mapping[str, Any], list[Any]] | None:
    # The structured data wins a tie: a field it holds is read from it.
    scored = [
        (_score(values, expected) + 0.01 * ("data" in rule), -n, rule, values)
        for n, (rule, values) in enumerate(results)
    ]
    scored = [s for s in scored if s[0] > 0]
    if not scored:
        return None
    _, _, rule, values = max(scored, key=lambda s: (s[0], s[1]))
    return rule, values


def _choice(
    rules: list[dict[str, Any]], values: Sequence[Any], expected: Sequence[Any], units: int
) -> Choice:
    pairs = list(zip(values, expected, strict=True))
    return Choice(
        rules,
        found=sum(e is not None for _, e in pairs),
        agree=sum(same(v, e) for v, e in pairs),
        wrong=sum(v is not None and e is not None and not same(v, e) for v, e in pairs),
        extra=sum(v is not None and e is None for v, e in pairs),
        units=units,
    )
