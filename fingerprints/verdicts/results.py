"""What the structure gate answers: per page, per page type and per site (``GateResult``:
its status, verdict, extraction report and proposed baseline), with one-line summaries."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from fingerprints.structure.comparison import Comparison

GateStatus = Literal[
    "passed", "structure_changed", "blocked", "fetch_failed", "no_baseline", "error"
]
GateVerdict = Literal[
    "passed",
    "drifted",
    "structure_changed",
    "extraction_broken",
    "blocked",
    "fetch_failed",
    "no_baseline",
    "error",
]
PageOutcome = Literal["ok", "changed", "blocked", "fetch_failed", "no_baseline"]
Mode = Literal["live", "fixtures"]
PARTS = "_parts"  # the sampler's page type for the follow-up requests of callbacks
PRECEDENCE: tuple[GateStatus, ...] = (
    "error",
    "no_baseline",
    "blocked",
    "fetch_failed",
    "structure_changed",
)
OUTCOME_STATUS: dict[str, GateStatus] = {
    "no_baseline": "no_baseline",
    "blocked": "blocked",
    "fetch_failed": "fetch_failed",
    "changed": "structure_changed",
}


@dataclass(frozen=True)
class PageCheck:
    url: str
    page_type: str
    outcome: PageOutcome
    reason: str
    similarity: float | None = None
    comparison: Comparison | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"url": self.url, "outcome": self.outcome, "reason": self.reason}
        if self.similarity is not None:
            data["similarity"] = round(self.similarity, 4)
        if self.comparison is not None and self.outcome == "changed":
            data["comparison"] = self.comparison.to_dict()
        return data


@dataclass(frozen=True)
class PageTypeResult:
    page_type: str
    threshold: float
    pages: tuple[PageCheck, ...]

    @property
    def passed(self) -> bool:
        return bool(self.pages) and all(p.outcome == "ok" for p in self.pages)

    @property
    def similarities(self) -> list[float]:
        return [p.similarity for p in self.pages if p.similarity is not None]

    @property
    def similarity(self) -> float | None:
        """The worst compared page's similarity: one changed page is enough to fail."""
        return min(self.similarities) if self.similarities else None

    @property
    def median_similarity(self) -> float | None:
        return statistics.median(self.similarities) if self.similarities else None

    @property
    def changed_features(self) -> list[str]:
        names: list[str] = []
        for check in self.pages:
            if check.outcome == "changed" and check.comparison is not None:
                names += [n for n in check.comparison.changed_features if n not in names]
        return names

    @property
    def worst(self) -> PageCheck | None:
        failing = [p for p in self.pages if p.outcome != "ok"]
        if not failing:
            return None
        return min(failing, key=lambda p: p.similarity if p.similarity is not None else -1.0)

    def details(self, limit: int = 6) -> list[str]:
        """What changed, from the worst page: selectors, types, state keys, DOM paths."""
        worst = self.worst
        if worst is None:
            return []
        if worst.comparison is None or worst.outcome != "changed":
            return [f"{worst.url}: {worst.reason}"]
        return [f"{worst.url}:"] + [f"  {line}" for line in worst.comparison.describe(limit)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "threshold": self.threshold,
            "similarity": None if self.similarity is None else round(self.similarity, 4),
            "median_similarity": (
                None if self.median_similarity is None else round(self.median_similarity, 4)
            ),
            "changed_features": self.changed_features,
            "pages": [p.to_dict() for p in self.pages],
        }


@dataclass(frozen=True)
class GateResult:
    passed: bool
    status: GateStatus
    site: str
    reason: str
    page_types: Mapping[str, PageTypeResult] = field(default_factory=dict)
    mode: Mode = "live"
    verdict: GateVerdict | None = None  # None: the status (set in __post_init__)
    # SiteBaseline-shaped JSON of the sampled structure (drifted and structure_changed).
    proposed_baseline: Mapping[str, Any] | None = None
    # ExtractionReport.to_dict(): per page type items, invalid items, lost fields, and
    # "failed_fields": {page_type: [field, ...]}. Set when extraction was judged.
    extraction: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.verdict is None:
            object.__setattr__(self, "verdict", self.status)

    @property
    def changed_page_types(self) -> list[str]:
        return [
            name
            for name, result in self.page_types.items()
            if any(p.outcome == "changed" for p in result.pages)
        ]

    def summary(self) -> str:
        """Plain text for an alert (Slack, Prefect artifact, log)."""
        what = "live structure check" if self.mode == "live" else "fixture check"
        if self.verdict == "drifted":
            verdict = "DRIFTED (the data comes out, the run continues)"
        else:
            verdict = "passed" if self.passed else f"FAILED ({self.verdict})"
        lines = [f"{self.site}: {what} {verdict}: {self.reason}"]
        for name, result in self.page_types.items():
            sim = "n/a" if result.similarity is None else f"{result.similarity:.3f}"
            state = "ok" if result.passed else "FAILED"
            if not result.passed and self.verdict == "drifted":
                state = "drifted"
            features = result.changed_features
            changed = f"; changed: {', '.join(features)}" if features else ""
            lines.append(
                f"- {name}: {state}, similarity {sim} (threshold {result.threshold:.2f}), "
                f"{len(result.pages)} page(s){changed}"
            )
            if not result.passed:
                lines += [f"    {line}" for line in result.details()]
        extraction = self.extraction or {}
        failed = extraction.get("failed_fields") or {}
        lines += [f"- extraction failed on {name}: {', '.join(f)}" for name, f in failed.items()]
        lines += [f"- extraction warning: {line}" for line in extraction.get("warnings") or ()]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "status": self.status,
            "verdict": self.verdict,
            "site": self.site,
            "mode": self.mode,
            "reason": self.reason,
            "page_types": {k: v.to_dict() for k, v in self.page_types.items()},
            "proposed_baseline": self.proposed_baseline,
            "extraction": self.extraction,
        }


def failure(site: str, status: GateStatus, reason: str, mode: Mode = "live") -> GateResult:
    return GateResult(passed=False, status=status, site=site, reason=reason, mode=mode)
