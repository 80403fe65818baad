"""Does the page carry the field? Evidence that an empty field is a loss, not an absence.

A review without a business reply, a review whose date of experience was never given:
the page genuinely lacks the field, and an empty field on its items is no sign that the
spider stopped reading it. The profile may declare, per page type and field, a
selector that matches where the page shows the data (``[fingerprint.page_types.<type>
.shows] reply = "..."``). Then, for that field, the gate judges each page on its own:

- the page shows the field and none of its items has it: the field is **lost**;
- the page does not show it: the field is **absent** there, never evidence of a loss.

A field without a declared rule keeps the statistical judgement of
``fingerprints.coverage.lost_fields`` (its baseline rate against the items' count).

``page_evidence`` reads a page (CSS, or XPath when the query starts with ``/``, ``(`` or
``./``, as the gate's selectors); the rest is pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from itemadapter import ItemAdapter
from parsel import Selector

from fingerprints.coverage import CoverageBaseline, is_filled, lost_fields


def _matches_text(selector: Selector, query: str) -> bool:
    """Whether ``query`` matches something with non-blank text (a node or a string)."""
    query = query.strip()
    found = selector.xpath(query) if query.startswith(("/", "(", "./")) else selector.css(query)
    for node in found:
        root = node.root
        value = root if isinstance(root, str) else "".join(node.xpath(".//text()").getall())
        if str(value).strip():
            return True
    return False


def page_evidence(body: bytes, rules: Mapping[str, str]) -> dict[str, bool]:
    """Field -> whether the page shows it, for each field with a declared rule."""
    if not rules:
        return {}
    try:
        selector = Selector(text=body.decode("utf-8", errors="replace"))
    except Exception:  # not markup at all: it shows nothing, so its empties prove nothing
        return dict.fromkeys(rules, False)
    return {name: _matches_text(selector, query) for name, query in rules.items()}


@dataclass(frozen=True)
class PageItems:
    """One sampled page's items and what the page shows (``page_evidence``)."""

    items: Sequence[Any]
    evidence: Mapping[str, bool] = field(default_factory=dict)


def judge_lost(pages: Sequence[PageItems], coverage: CoverageBaseline) -> tuple[str, ...]:
    """The coverage baseline's fields the sample lost, judged by evidence where declared.

    A field with a rule on a page is lost when that page shows it and none of the page's
    items fills it (whatever the baseline's rate: the page says the data is there). Pages
    without a rule for the field are judged together by their baseline rate
    (``lost_fields``).
    """
    lost: set[str] = set()
    for name in coverage.fields:
        ruled = [page for page in pages if name in page.evidence]
        if any(missed(page, name) for page in ruled):
            lost.add(name)
            continue
        unruled = [item for page in pages if name not in page.evidence for item in page.items]
        narrowed = CoverageBaseline(
            coverage.site,
            {name: coverage.fields[name]},
            coverage.tolerance,
            coverage.min_items,
            coverage.items,
        )
        if unruled and lost_fields(unruled, narrowed):
            lost.add(name)
    return tuple(sorted(lost))


def missed(page: PageItems, name: str) -> bool:
    """The page shows the field and yielded items, none of which has it."""
    if not page.evidence.get(name) or not page.items:
        return False
    return not any(_filled(item, name) for item in page.items)


def _filled(item: Any, name: str) -> bool:
    return is_filled(ItemAdapter(item).get(name))


def absent_fields(pages: Sequence[PageItems]) -> tuple[str, ...]:
    """Fields no sampled page shows (for the report: empty, and rightly so)."""
    names = {name for page in pages for name in page.evidence}
    return tuple(
        sorted(name for name in names if not any(page.evidence.get(name) for page in pages))
    )
