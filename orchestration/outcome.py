"""What a scrape run's data came to, as the state its flow run ends in (pure functions).

Reads the job document (``core.jobs.index.job_document``) and what the report step
measured besides (field coverage, a drifted gate); sorts the findings into losses,
warnings and nothing stored, never contradicting a crawl that judged itself (its
``close_reason`` and ``outcome``). ``judge`` gives the one final word shown in the Prefect
state, the document's ``status``, the report and the Slack summary: the table is
docs/orchestration.md's "What a run's state says".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from core.figures.stats import unparsed_pages
from core.jobs.outcome import EXIT_CODES, FINISHED, NONE_LISTED
from core.recrawl.removals import failed_requests

COMPLETED, WARNINGS = "Completed", "CompletedWithWarnings"
INCOMPLETE, NOTHING_STORED = "Incomplete", "NothingStored"
LOSING_STATES = (INCOMPLETE, NOTHING_STORED)  # FAILED-type: the data is not all there
# The crawl's own close reasons (the job document's ``close_reason``, with its one line,
# ``outcome``, where the crawl judged itself) that say data was lost: those ``scrapy crawl``
# exits non-zero for (core.jobs.outcome); a budget's reason is a warning (``budgets``);
# ``finished`` with nothing stored: the site lists none (``NONE_LISTED``, declared by a spider).
LOSING_CLOSE_REASONS = frozenset(reason for reason, code in EXIT_CODES.items() if code)
TOP_REASONS = 3  # validation reasons named in the nothing-stored line


@dataclass(frozen=True)
class Outcome:
    """The run's final word; ``state`` names its Prefect state (module docstring)."""

    state: str
    losses: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    reason: str | None = None  # the one line of a run that stored nothing
    counts: Mapping[str, int] = field(default_factory=dict)  # what the lines are made of

    @property
    def failed(self) -> bool:
        """A FAILED-type state: nothing stored, or something lost."""
        return self.state in LOSING_STATES

    @property
    def status(self) -> str:
        """The job document's ``status``."""
        return {NOTHING_STORED: "failed", INCOMPLETE: "incomplete"}.get(self.state, "completed")

    @property
    def message(self) -> str:
        """The state's message: the one line of a run that stored nothing, else the
        losses, then the warnings."""
        if self.reason:
            return self.reason
        return "; ".join([*self.losses, *self.warnings])

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"status": self.status, "message": self.message}


def numbers(document: Mapping[str, Any]) -> dict[str, int]:
    """The job's counters as integers (the document keeps them as text)."""
    found: dict[str, int] = {}
    for name, value in (document.get("counters") or {}).items():
        try:
            found[name] = int(value)
        except (TypeError, ValueError):
            continue  # a gauge (a float) is no count
    return found


def _figure(document: Mapping[str, Any], name: str) -> int:
    return int(document.get(name) or 0)


def loss_counts(document: Mapping[str, Any]) -> dict[str, int]:
    """Every figure of data lost, by name, from the job document (0: none)."""
    counters = numbers(document)
    scraped, stored = _figure(document, "items_scraped"), _figure(document, "items_stored")
    return {
        "pages_unparsed": _figure(document, "pages_unparsed"),
        "pages_refused": _figure(document, "pages_refused"),
        "requests_failed": failed_requests(counters),
        "items_invalid": _figure(document, "items_invalid"),
        "items_not_stored": max(0, scraped - stored),
        "items_dead_letter": _figure(document, "items_dead_letter"),
        "spill_remaining": _figure(document, "spill_remaining"),
        "items_incomplete": _figure(document, "items_incomplete"),
    }


def _by_name(counts: Mapping[str, int], prefix: str = "", suffix: str = "") -> str:
    """``demo/product_unparsed 111, demo/listing_unparsed 2``: the largest first."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{name.removeprefix(prefix).removesuffix(suffix)} {n}" for name, n in ranked)


def invalid_reasons(counters: Mapping[str, int], limit: int = TOP_REASONS) -> str:
    """``name missing 20, price float_type 3``: why validation dropped items, from
    ``validation/invalid/<type>/<field>/<reason>``, the most frequent first."""
    reasons: Counter[str] = Counter()
    for name, value in counters.items():
        parts = name.split("/")
        if name.startswith("validation/invalid/") and len(parts) >= 5 and value:
            reasons[f"{parts[3]} {'/'.join(parts[4:])}"] += int(value)
    ranked = sorted(reasons.items(), key=lambda item: (-item[1], item[0]))[:limit]
    return ", ".join(f"{reason} {n}" for reason, n in ranked)


def losses(document: Mapping[str, Any], coverage: Mapping[str, Any] | None = None) -> list[str]:
    """What the job lost, one line each (empty: nothing)."""
    counts, counters = loss_counts(document), numbers(document)
    lines = []
    if counts["pages_unparsed"]:
        which = _by_name(unparsed_pages(counters))
        lines.append(
            f"{counts['pages_unparsed']} page(s) could not be parsed"
            f"{f' ({which})' if which else ''}: their items are missing from this job"
        )
    if counts["pages_refused"]:
        lines.append(
            f"{counts['pages_refused']} page(s) refused by the site (every answer a block)"
        )
    if counts["requests_failed"]:
        lines.append(f"{counts['requests_failed']} request(s) failed for good")
    if counts["items_invalid"]:
        why = invalid_reasons(counters)
        lines.append(
            f"{counts['items_invalid']} item(s) dropped by validation{f' ({why})' if why else ''}"
        )
    if counts["items_not_stored"]:
        parts = [
            f"{counts['items_dead_letter']} dead-lettered" if counts["items_dead_letter"] else "",
            f"{counts['spill_remaining']} still in the spill" if counts["spill_remaining"] else "",
        ]
        detail = ", ".join(part for part in parts if part)
        lines.append(
            f"{counts['items_not_stored']} of {_figure(document, 'items_scraped')} item(s) "
            f"not stored{f' ({detail})' if detail else ''}"
        )
    if counts["items_incomplete"]:
        missing = _by_name(
            {k: v for k, v in counters.items() if k.startswith("parts/") and v}, "parts/"
        )
        lines.append(
            f"{counts['items_incomplete']} item(s) stored without some of their parts"
            f"{f' ({missing})' if missing else ''}: fetched again next run"
        )
    if coverage and coverage.get("drops"):
        fields = ", ".join(str(drop["field"]) for drop in coverage["drops"])
        lines.append(f"field coverage dropped: {fields}")
    reason = str(document.get("close_reason") or "")
    if reason in LOSING_CLOSE_REASONS and not lines:
        said = f": {document['outcome']}" if document.get("outcome") else ""
        lines.append(f"the crawl closed {reason}{said}")
    return lines


def lists_none(document: Mapping[str, Any], lost: Sequence[str]) -> bool:
    """A job that stored nothing because the site lists nothing: it lost nothing, and the
    crawl judged it ``finished`` or a spider counted a page listing no items."""
    if lost:
        return False
    if document.get("close_reason"):
        return document["close_reason"] == FINISHED
    return numbers(document).get(NONE_LISTED, 0) > 0


def warnings(
    document: Mapping[str, Any],
    *,
    drift: str | None = None,
    errors_per_1000_pages: float = 10.0,
) -> list[str]:
    """Why a job that lost nothing is not plain green, one line each."""
    lines = []
    errors = _figure(document, "errors")
    pages = int(document.get("pages") or document.get("responses") or 0)
    if errors and errors > errors_per_1000_pages * max(pages, 1) / 1000:
        lines.append(
            f"{errors} ERROR log line(s) in {pages} pages fetched "
            f"(over {errors_per_1000_pages:g} per 1,000 pages)"
        )
    if document.get("budgets"):
        lines.append(f"crawl budget reached, the crawl was cut short: {document['budgets']}")
    if drift:
        lines.append(f"structure drifted (the data still came out): {drift}")
    return lines


def nothing_stored(document: Mapping[str, Any], lost: Sequence[str]) -> str:
    """The one line of a job that stored no item: how many were found, and why none
    was stored ("0 of 20 items stored: all dropped by validation (name missing 20)").
    The crawl's own line (``outcome``) when it judged itself, so both say the same."""
    if document.get("close_reason") in LOSING_CLOSE_REASONS and document.get("outcome"):
        return str(document["outcome"])
    if document.get("refusal"):
        return str(document["refusal"])
    counters = numbers(document)
    scraped, invalid = _figure(document, "items_scraped"), _figure(document, "items_invalid")
    found = scraped + invalid
    pages = int(document.get("pages") or document.get("responses") or 0)
    if found and invalid == found:
        why = invalid_reasons(counters)
        return f"0 of {found} items stored: all dropped by validation{f' ({why})' if why else ''}"
    if found:
        return f"0 of {found} items stored: " + "; ".join(lost or ["the store took none"])
    if not pages:
        failed = failed_requests(counters)
        cause = f"{failed} request(s) failed for good" if failed else "no request was answered"
        return f"0 items stored: no page was fetched ({cause})"
    why = "; ".join(lost) if lost else "no page yielded an item (the selectors match nothing?)"
    return f"0 items stored from {pages} pages fetched: {why}"


def judge(
    document: Mapping[str, Any],
    *,
    coverage: Mapping[str, Any] | None = None,
    drift: str | None = None,
    errors_per_1000_pages: float = 10.0,
) -> Outcome:
    """The run's final word on its job document (module docstring)."""
    lost = losses(document, coverage)
    warned = warnings(document, drift=drift, errors_per_1000_pages=errors_per_1000_pages)
    counts = loss_counts(document)
    if not _figure(document, "items_stored") and not lists_none(document, lost):
        reason = nothing_stored(document, lost)
        return Outcome(NOTHING_STORED, tuple(lost), tuple(warned), reason, counts)
    state = INCOMPLETE if lost else WARNINGS if warned else COMPLETED
    return Outcome(state, tuple(lost), tuple(warned), None, counts)
