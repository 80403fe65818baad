"""The truth matrix's verdicts: a scenario, the checks it measured, and how a row is judged
(``bench.outcomes``). A check pairs what the platform said with the truth; a row whose
checks disagree is a mismatch."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.outcome_runs import Run, Services


@dataclass(frozen=True)
class Check:
    label: str
    actual: object
    expected: object

    @property
    def ok(self) -> bool:
        return self.actual == self.expected


@dataclass
class Outcome:
    """What a scenario measured: its word against the expected one, and its checks."""

    expected_word: str
    actual_word: str
    stored: int
    served: int
    checks: list[Check] = field(default_factory=list)
    hung: bool = False
    note: str = ""

    @property
    def mismatches(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]


@dataclass(frozen=True)
class Scenario:
    name: str
    checks: str  # what it checks, for the docs' table
    run: Callable[[Services, Path], Outcome]
    smoke: bool = False
    kind: str = "crawl"  # crawl | flow


def judged(
    run: Run,
    word: str,
    stored: int,
    *,
    extra: tuple[Check, ...] = (),
    report_stored: int | None = None,
    note: str = "",
) -> Outcome:
    """The common checks: the word, ES against the expected count, the report's stored
    figure against ES (the job's own documents: ``report_stored`` when ES holds others)."""
    checks = [
        Check("word", run.word(), word),
        Check("stored in ES", run.stored, stored),
        Check(
            "report items_stored",
            int(run.report.get("items_stored") or 0),
            run.stored if report_stored is None else report_stored,
        ),
        # The job document's verdict (what the flow's state is judged on) agrees.
        Check("report close_reason", run.report.get("close_reason"), word.split("/")[0]),
        *extra,
    ]
    return Outcome(word, run.word(), run.stored, run.served, checks, run.hung, note or run.line())
