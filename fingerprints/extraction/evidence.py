"""Does the page carry the field? Evidence that an empty field is absent, not lost.

The profile declares, per page type and field, where a page shows the field and what
says it lacks it (``[fingerprint.page_types.<type>.shows]`` / ``.absent``: ``page``,
``re``, ``each``, ``field`` + ``equals``). ``page_evidence`` reads a page into how many of
its records are *expected* to have each field (a field without rules: every record);
``tally`` counts expected and filled records, what ``fingerprints.extraction.fields`` judges and the
coverage baselines are measured on.

Reads: the profile's ``shows`` / ``absent`` rules. Their forms: docs/fingerprints.md
"Verdicts: judged by the data, on every run" and "Field coverage".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from itemadapter import ItemAdapter
from parsel import Selector

from crawlers.profile_schema import Evidence, Shown
from fingerprints.baselines.coverage import is_filled

_PATH_PREFIXES = ("/", "(", "./")


@dataclass(frozen=True)
class PageEvidence:
    """What one page says about its fields (``page_evidence``)."""

    shown: Mapping[str, int] = field(default_factory=dict)  # field -> instances shown
    lacks: frozenset[str] = frozenset()  # fields no record of the page has
    lacking: Mapping[str, int] = field(default_factory=dict)  # field -> records lacking it
    # field -> ((other field, values), ...): a record holding one of the values lacks it.
    when: Mapping[str, tuple[tuple[str, tuple[Any, ...]], ...]] = field(default_factory=dict)
    empty: bool = False  # the page says it has no record at all

    def ruled(self, name: str) -> bool:
        """Whether any evidence speaks about this field on this page."""
        return name in self.shown or name in self.lacks or name in self.lacking or name in self.when


NO_EVIDENCE = PageEvidence()


@dataclass(frozen=True)
class Tally:
    """Records expected to have a field, and how many of them have it."""

    expected: int = 0
    filled: int = 0

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.expected + other.expected, self.filled + other.filled)

    @property
    def rate(self) -> float | None:
        return self.filled / self.expected if self.expected else None


def _nodes(selector: Selector, query: str) -> list[Any]:
    query = query.strip()
    return list(selector.xpath(query) if query.startswith(_PATH_PREFIXES) else selector.css(query))


def _count_text(selector: Selector, query: str) -> int:
    """How many nodes (or strings) ``query`` matches with non-blank text."""
    count = 0
    for node in _nodes(selector, query):
        root = node.root
        value = root if isinstance(root, str) else "".join(node.xpath(".//text()").getall())
        if str(value).strip():
            count += 1
    return count


def _count(selector: Selector, source: str, rule: Shown) -> int:
    if rule.re is not None:
        return len(re.findall(rule.re, source))
    return _count_text(selector, rule.select or "")


def page_evidence(
    body: bytes,
    shows: Mapping[str, Sequence[Shown]] | None = None,
    absent: Mapping[str, Sequence[Evidence]] | None = None,
    empty: Sequence[Evidence] = (),
) -> PageEvidence:
    """What the page shows and lacks, for each field with declared rules, and whether it
    says it has no record at all (``empty``)."""
    shows, absent = shows or {}, absent or {}
    if not shows and not absent and not empty:
        return NO_EVIDENCE
    source = body.decode("utf-8", errors="replace")
    try:
        selector = Selector(text=source)
    except Exception:  # not markup at all: it shows nothing
        selector = Selector(text="<html></html>")
    shown = {
        name: max(_count(selector, source, rule) for rule in rules) for name, rules in shows.items()
    }
    lacks: set[str] = set()
    lacking: dict[str, int] = {}
    when: dict[str, tuple[tuple[str, tuple[Any, ...]], ...]] = {}
    for name, rules in absent.items():
        for rule in rules:
            if rule.page is not None or rule.re is not None:
                if (rule.page and _nodes(selector, rule.page)) or (
                    rule.re and re.search(rule.re, source)
                ):
                    lacks.add(name)
            elif rule.each is not None:
                lacking[name] = lacking.get(name, 0) + len(_nodes(selector, rule.each))
            elif rule.field is not None:
                when[name] = (*when.get(name, ()), (rule.field, tuple(rule.equals)))
    nothing = any(
        (rule.page and _nodes(selector, rule.page)) or (rule.re and re.search(rule.re, source))
        for rule in empty
    )
    return PageEvidence(shown, frozenset(lacks), lacking, when, bool(nothing))


def value_of(record: Any, name: str) -> Any:
    try:
        return ItemAdapter(record).get(name)
    except TypeError:  # not an item (a bare value): no field
        return None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _matches(value: Any, wanted: tuple[Any, ...]) -> bool:
    # 0 and 0.0 are one value; True is no 1 (a boolean field says yes or no).
    return any(
        (type(value) is type(w) or (_number(value) and _number(w))) and value == w for w in wanted
    )


def record_lacks(record: Any, evidence: PageEvidence, name: str) -> bool:
    """The record's own fields say it lacks ``name`` (``field`` + ``equals`` evidence)."""
    return any(
        _matches(value_of(record, other), values) for other, values in evidence.when.get(name, ())
    )


def tally(records: Sequence[Any], evidence: PageEvidence, name: str) -> Tally:
    """Records of one page expected to have ``name`` and how many of those have it."""
    candidates = [r for r in records if not record_lacks(r, evidence, name)]
    if name in evidence.lacks:
        expected = 0
    else:
        expected = max(0, len(candidates) - evidence.lacking.get(name, 0))
    if name in evidence.shown:
        expected = min(expected, evidence.shown[name])
    filled = sum(1 for record in candidates if is_filled(value_of(record, name)))
    return Tally(expected, min(filled, expected))


def tallies(
    groups: Iterable[tuple[Sequence[Any], PageEvidence]], names: Iterable[str] = ()
) -> dict[str, Tally]:
    """Field -> tally over groups of records (each with its page's evidence), for every
    field a record has or ``names`` lists."""
    groups = [(list(records), evidence) for records, evidence in groups]
    wanted = set(names)
    for records, _ in groups:
        for record in records:
            wanted.update(ItemAdapter(record).field_names())
    totals: dict[str, Tally] = {}
    for name in sorted(wanted):
        total = Tally()
        for records, evidence in groups:
            total = total + tally(records, evidence, name)
        totals[name] = total
    return totals


def absent_fields(groups: Iterable[tuple[Sequence[Any], PageEvidence]]) -> tuple[str, ...]:
    """Fields with rules that no page of the sample expects of any record (for the report:
    empty, and rightly so)."""
    groups = list(groups)
    names = {
        name
        for _, evidence in groups
        for name in (*evidence.shown, *evidence.lacks, *evidence.lacking, *evidence.when)
    }
    found = tallies(groups, names)
    return tuple(sorted(name for name in names if name in found and found[name].expected == 0))


@dataclass(frozen=True)
class EvidenceRules:
    """One page type's ``shows`` and ``absent`` rules (the profile's)."""

    shows: Mapping[str, Sequence[Shown]] = field(default_factory=dict)
    absent: Mapping[str, Sequence[Evidence]] = field(default_factory=dict)
    empty: Sequence[Evidence] = ()

    def __bool__(self) -> bool:
        return bool(self.shows or self.absent or self.empty)

    def read(self, body: bytes) -> PageEvidence:
        return page_evidence(body, self.shows, self.absent, self.empty)
