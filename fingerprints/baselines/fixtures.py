"""The fixtures of a site against their own baseline (each page's similarity, judged as
the fixture check judges it: ``baseline``'s outliers), and fixture files written from
fetched pages."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fingerprints.baselines.store import (
    FIXTURE_SUFFIXES,
    FIXTURES_DIR,
    SITES_DIR,
    FingerprintConfig,
    SiteBaseline,
    fixture_pages,
    site_dir,
)
from fingerprints.structure.comparison import Comparison, compare
from fingerprints.structure.fingerprint import FEATURES, fingerprint


@dataclass(frozen=True)
class FixtureScore:
    """One fixture page against a baseline, judged as the fixture check judges it."""

    page_type: str
    path: str  # relative to the site directory, as recorded in baseline.json
    threshold: float
    comparison: Comparison

    @property
    def similarity(self) -> float:
        return self.comparison.similarity

    @property
    def passed(self) -> bool:
        return self.comparison.passed(self.threshold)

    @property
    def lacks(self) -> dict[str, tuple[str, ...]]:
        """Feature -> baseline tokens (seen on most fixtures) that this page does not have."""
        lacking = {
            f: self.comparison.removed[f] for f in FEATURES if self.comparison.removed.get(f)
        }
        if self.comparison.missing_required:
            lacking["selectors"] = self.comparison.missing_required
        return lacking

    def describe(self, limit: int = 6) -> list[str]:
        lines = []
        for feature, tokens in self.lacks.items():
            more = f" (+{len(tokens) - limit} more)" if len(tokens) > limit else ""
            lines.append(f"lacks {feature}: {', '.join(tokens[:limit])}{more}")
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "page_type": self.page_type,
            "path": self.path,
            "similarity": round(self.similarity, 4),
            "threshold": self.threshold,
            "passed": self.passed,
            "lacks": {k: list(v) for k, v in self.lacks.items()},
        }


def score_fixtures(
    baseline: SiteBaseline,
    *,
    sites_dir: Path = SITES_DIR,
    config: FingerprintConfig | None = None,
) -> list[FixtureScore]:
    """Each fixture page's similarity to ``baseline``, worst first.

    The same comparison and threshold as the fixture check (``fingerprints.gate``):
    a fixture that fails here fails ``python -m fingerprints check`` too. A fixture
    lacking a block most others have (reviews, a rating) scores low because every token
    of the block costs its frequency; that is what ``baseline`` reports as an outlier.
    """
    root = site_dir(baseline.site, sites_dir)
    scores = []
    for page_type, files in fixture_pages(baseline.site, sites_dir).items():
        page_baseline = baseline.page_types.get(page_type)
        if page_baseline is None:
            continue
        threshold = baseline.threshold_for(page_type, config)
        for path in files:
            fp = fingerprint(path.read_bytes(), page_baseline.selector_queries)
            scores.append(
                FixtureScore(
                    page_type,
                    path.relative_to(root).as_posix(),
                    threshold,
                    compare(fp, page_baseline),
                )
            )
    return sorted(scores, key=lambda s: (s.passed, s.similarity, s.path))


def fixture_name(path: str) -> str:
    """A file name for a fixture fetched from ``path`` (``/category/x?page=2``)."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", path).strip("-")
    return f"{slug or 'index'}.html"


def write_fixtures(
    site: str,
    pages: Mapping[str, Sequence[tuple[str, bytes]]],
    *,
    sites_dir: Path = SITES_DIR,
) -> list[Path]:
    """Replace the fixtures of the given page types with ``(path, body)`` pages."""
    written = []
    for page_type, entries in pages.items():
        directory = site_dir(site, sites_dir) / FIXTURES_DIR / page_type
        directory.mkdir(parents=True, exist_ok=True)
        for old in directory.iterdir():
            if old.suffix.lower() in FIXTURE_SUFFIXES:
                old.unlink()
        for path, body in entries:
            target = directory / fixture_name(path)
            target.write_bytes(body)
            written.append(target)
    return written
