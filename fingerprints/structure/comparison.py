"""A page type's baseline (every token with the fraction of fixture pages that had it, the
selectors' match counts) and a page's similarity to it: a weighted Jaccard index per
feature, and the required selectors a page lost (docs/fingerprints.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# Bump when any feature's extraction changes: baselines of another version are refused.
from fingerprints.structure.fingerprint import (
    FEATURES,
    REPORT_MIN_FREQUENCY,
    WEIGHTS,
    Bucket,
    Fingerprint,
)


def bucket(count: int) -> Bucket:
    return "none" if count == 0 else "one" if count == 1 else "many"


@dataclass(frozen=True)
class SelectorBaseline:
    query: str
    min: int
    max: int
    buckets: tuple[Bucket, ...]

    @property
    def required(self) -> bool:
        """Found on every fixture page: the spider can count on it."""
        return self.min > 0

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "min": self.min, "max": self.max, "buckets": self.buckets}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SelectorBaseline:
        return cls(
            query=str(data["query"]),
            min=int(data["min"]),
            max=int(data["max"]),
            buckets=tuple(data["buckets"]),
        )


@dataclass(frozen=True)
class PageTypeBaseline:
    """What the fixture pages of one page type share: token -> fraction of pages."""

    page_type: str
    pages: int
    skeleton: Mapping[str, float]
    schema: Mapping[str, float]
    state: Mapping[str, float]
    selectors: Mapping[str, SelectorBaseline] = field(default_factory=dict)
    threshold: float | None = None  # overrides the site's threshold for this page type

    def tokens(self, feature: str) -> Mapping[str, float]:
        value: Mapping[str, float] = getattr(self, feature)
        return value

    @classmethod
    def build(
        cls,
        page_type: str,
        prints: Sequence[Fingerprint],
        selectors: Mapping[str, str] | None = None,
        *,
        threshold: float | None = None,
    ) -> PageTypeBaseline:
        if not prints:
            raise ValueError(f"page type {page_type!r}: no pages to build a baseline from")

        def frequencies(feature: str) -> dict[str, float]:
            counts = Counter(token for fp in prints for token in fp.tokens(feature))
            return {token: round(n / len(prints), 4) for token, n in sorted(counts.items())}

        selector_baselines = {}
        for name, query in (selectors or {}).items():
            counts = [fp.selector_counts.get(name, 0) for fp in prints]
            selector_baselines[name] = SelectorBaseline(
                query=query,
                min=min(counts),
                max=max(counts),
                buckets=tuple(sorted({bucket(n) for n in counts})),
            )
        return cls(
            page_type=page_type,
            pages=len(prints),
            skeleton=frequencies("skeleton"),
            schema=frequencies("schema"),
            state=frequencies("state"),
            selectors=selector_baselines,
            threshold=threshold,
        )

    @property
    def selector_queries(self) -> dict[str, str]:
        return {name: s.query for name, s in self.selectors.items()}


@dataclass(frozen=True)
class Comparison:
    """One page against its page type's baseline."""

    similarity: float
    scores: Mapping[str, float]  # the features that applied
    removed: Mapping[str, tuple[str, ...]]  # feature -> expected tokens the page lacks
    added: Mapping[str, tuple[str, ...]]  # feature -> tokens the baseline never saw
    selector_changes: tuple[str, ...] = ()
    missing_required: tuple[str, ...] = ()  # required selectors that found nothing

    def passed(self, threshold: float) -> bool:
        return self.similarity >= threshold and not self.missing_required

    @property
    def changed_features(self) -> list[str]:
        """Feature names that differ from the baseline (for the one-line alert)."""
        names = [f for f in FEATURES if self.removed.get(f) or self.added.get(f)]
        if (self.selector_changes or self.missing_required) and "selectors" not in names:
            names.append("selectors")
        return names

    def describe(self, limit: int = 8) -> list[str]:
        """Human-readable lines: which features changed and how."""
        lines = [f"required selector missing: {name}" for name in self.missing_required]
        lines += [f"selector {change}" for change in self.selector_changes]
        for feature in ("schema", "state", "skeleton"):
            removed, added = self.removed.get(feature, ()), self.added.get(feature, ())
            if removed:
                more = f" (+{len(removed) - limit} more)" if len(removed) > limit else ""
                lines.append(f"{feature} removed: {', '.join(removed[:limit])}{more}")
            if added:
                more = f" (+{len(added) - limit} more)" if len(added) > limit else ""
                lines.append(f"{feature} added: {', '.join(added[:limit])}{more}")
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "similarity": round(self.similarity, 4),
            "scores": {k: round(v, 4) for k, v in self.scores.items()},
            "removed": {k: list(v) for k, v in self.removed.items() if v},
            "added": {k: list(v) for k, v in self.added.items() if v},
            "selector_changes": list(self.selector_changes),
            "missing_required": list(self.missing_required),
        }


def _set_similarity(
    expected: Mapping[str, float], present: frozenset[str]
) -> tuple[float, tuple[str, ...], tuple[str, ...]] | None:
    """Baseline-weighted Jaccard; None when neither side has any token."""
    if not expected and not present:
        return None
    shared = sum(1 for token in present if token in expected)
    missing = {t: f for t, f in expected.items() if t not in present}
    added = sorted(t for t in present if t not in expected)
    denominator = shared + sum(missing.values()) + len(added)
    score = shared / denominator if denominator else 1.0
    removed = sorted(
        (t for t, f in missing.items() if f >= REPORT_MIN_FREQUENCY),
        key=lambda t: (-missing[t], t),
    )
    return score, tuple(removed), tuple(added)


def _selector_similarity(
    baselines: Mapping[str, SelectorBaseline], counts: Mapping[str, int]
) -> tuple[float, tuple[str, ...], tuple[str, ...]] | None:
    if not baselines:
        return None
    scores, changes, missing = [], [], []
    for name, expected in sorted(baselines.items()):
        count = counts.get(name, 0)
        seen = f"{name} ({expected.query!r}): {count} found, baseline {expected.min}-{expected.max}"
        if expected.required and count == 0:
            scores.append(0.0)
            missing.append(f"{name} ({expected.query!r})")
        elif expected.max == 0 and count > 0:
            scores.append(0.5)
            changes.append(seen + " (appeared)")
        elif bucket(count) in expected.buckets or not expected.required:
            scores.append(1.0)
        else:
            scores.append(0.5)
            changes.append(seen + " (cardinality changed)")
    return sum(scores) / len(scores), tuple(changes), tuple(missing)


def compare(page: Fingerprint, baseline: PageTypeBaseline) -> Comparison:
    scores: dict[str, float] = {}
    removed: dict[str, tuple[str, ...]] = {}
    added: dict[str, tuple[str, ...]] = {}
    for feature in ("skeleton", "schema", "state"):
        result = _set_similarity(baseline.tokens(feature), page.tokens(feature))
        if result is not None:
            scores[feature], removed[feature], added[feature] = result
    selector_result = _selector_similarity(baseline.selectors, page.selector_counts)
    changes: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    if selector_result is not None:
        scores["selectors"], changes, missing = selector_result
    total = sum(WEIGHTS[f] for f in scores)
    similarity = sum(WEIGHTS[f] * s for f, s in scores.items()) / total if total else 1.0
    return Comparison(
        similarity=similarity,
        scores=scores,
        removed=removed,
        added=added,
        selector_changes=changes,
        missing_required=missing,
    )
