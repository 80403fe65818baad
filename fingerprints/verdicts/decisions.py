"""The structure gate's verdicts, pure: pages and a baseline in, a ``GateResult`` out.

Each page against its page type's baseline (``check_page``), the site's result with the
precedence of problems (``evaluate``), the baseline the sample gives (``propose_baseline``)
and the verdict of a structure change judged by its extraction (``decide``)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from core.fetch.blocks import BlockRules, classify
from fingerprints.baselines.store import FingerprintConfig, SiteBaseline
from fingerprints.extraction.judgement import ExtractionReport
from fingerprints.sampling.fetch import Page
from fingerprints.structure.comparison import PageTypeBaseline, compare
from fingerprints.structure.fingerprint import fingerprint
from fingerprints.verdicts.results import (
    OUTCOME_STATUS,
    PRECEDENCE,
    GateResult,
    GateStatus,
    GateVerdict,
    Mode,
    PageCheck,
    PageTypeResult,
    failure,
)

# -- the comparison (pure: pages in, verdict out) ----------------------------------------------


def check_page(
    page: Page,
    baseline: SiteBaseline,
    threshold: float,
    rules: BlockRules | None = None,
) -> PageCheck:
    if page.error is not None:
        return PageCheck(page.url, page.page_type, "fetch_failed", page.error)
    verdict = classify(page.status, page.headers, page.body, rules=rules)
    if verdict.is_block:
        return PageCheck(page.url, page.page_type, "blocked", str(verdict))
    if not verdict.ok:
        return PageCheck(page.url, page.page_type, "fetch_failed", str(verdict))
    page_baseline = baseline.page_types.get(page.page_type)
    if page_baseline is None:
        reason = f"no baseline for page type {page.page_type!r}"
        return PageCheck(page.url, page.page_type, "no_baseline", reason)
    fp = fingerprint(page.body, page_baseline.selector_queries, content_type=page.content_type)
    comparison = compare(fp, page_baseline)
    if comparison.passed(threshold):
        reason = f"similarity {comparison.similarity:.3f} >= {threshold:.2f}"
        return PageCheck(page.url, page.page_type, "ok", reason, comparison.similarity, comparison)
    if comparison.missing_required:
        reason = f"required selectors missing: {', '.join(comparison.missing_required)}"
    else:
        reason = f"similarity {comparison.similarity:.3f} < {threshold:.2f}"
    return PageCheck(page.url, page.page_type, "changed", reason, comparison.similarity, comparison)


def evaluate(
    site: str,
    pages: Sequence[Page],
    baseline: SiteBaseline,
    *,
    config: FingerprintConfig | None = None,
    rules: BlockRules | None = None,
    mode: Mode = "live",
) -> GateResult:
    """Compare sampled pages with the baseline; every baseline page type must be sampled."""
    if not pages:
        return failure(site, "fetch_failed", "empty sample: no pages were fetched", mode)
    stale = baseline.stale_reasons(config)
    if stale:
        reason = (
            "baseline is stale: " + "; ".join(stale) + f" (python -m fingerprints baseline {site})"
        )
        return failure(site, "no_baseline", reason, mode)
    by_type: dict[str, list[PageCheck]] = {}
    for page in pages:
        threshold = baseline.threshold_for(page.page_type, config)
        by_type.setdefault(page.page_type, []).append(check_page(page, baseline, threshold, rules))
    results = {
        name: PageTypeResult(name, baseline.threshold_for(name, config), tuple(checks))
        for name, checks in by_type.items()
    }
    problems: dict[GateStatus, list[str]] = {}
    unsampled = sorted(set(baseline.page_types) - set(by_type))
    if unsampled:
        problems["fetch_failed"] = [f"no sample pages for page type(s) {', '.join(unsampled)}"]
    for name, result in results.items():
        for check in result.pages:
            if check.outcome != "ok":
                status = OUTCOME_STATUS[check.outcome]
                problems.setdefault(status, []).append(f"{name} {check.url}: {check.reason}")
    if not problems:
        worst = min(
            (r.similarity for r in results.values() if r.similarity is not None), default=1.0
        )
        reason = (
            f"{len(pages)} page(s) of {len(results)} page type(s) match the baseline "
            f"(lowest similarity {worst:.3f})"
        )
        return GateResult(True, "passed", site, reason, results, mode)
    status = next(s for s in PRECEDENCE if s in problems)
    reason = _reason(status, problems, results)
    return GateResult(False, status, site, reason, results, mode)


def _reason(
    status: GateStatus,
    problems: Mapping[GateStatus, list[str]],
    results: Mapping[str, PageTypeResult],
) -> str:
    if status == "structure_changed":
        changed = [
            f"{name} (similarity {r.similarity:.3f} < {r.threshold:.2f}; "
            f"changed: {', '.join(r.changed_features) or 'selectors'})"
            for name, r in results.items()
            if any(p.outcome == "changed" for p in r.pages)
        ]
        head = "structure changed: " + "; ".join(changed)
    else:
        first = problems[status]
        more = f" (+{len(first) - 3} more)" if len(first) > 3 else ""
        head = f"{status.replace('_', ' ')}: " + "; ".join(first[:3]) + more
    others = [s for s in PRECEDENCE if s in problems and s != status]
    if others:
        head += " | also: " + ", ".join(f"{s} x{len(problems[s])}" for s in others)
    return head


def propose_baseline(
    result: GateResult, pages: Sequence[Page], baseline: SiteBaseline
) -> SiteBaseline:
    """The baseline the sampled pages would give (``PageTypeBaseline.build``, the builder
    ``python -m fingerprints baseline`` uses), with the same selectors and thresholds;
    page types not in the sample keep their current entry."""
    prints: dict[str, list[Any]] = {}
    digests: dict[str, dict[str, str]] = {}
    for page in pages:
        checks = result.page_types.get(page.page_type)
        page_baseline = baseline.page_types.get(page.page_type)
        if checks is None or page_baseline is None or not _comparable(checks, page.url):
            continue
        fp = fingerprint(page.body, page_baseline.selector_queries, content_type=page.content_type)
        prints.setdefault(page.page_type, []).append(fp)
        digests.setdefault(page.page_type, {})[page.url] = hashlib.sha256(page.body).hexdigest()
    page_types = dict(baseline.page_types)
    fixtures = {name: dict(entries) for name, entries in baseline.fixtures.items()}
    for name, page_prints in prints.items():
        old = baseline.page_types[name]
        page_types[name] = PageTypeBaseline.build(
            name, page_prints, old.selector_queries, threshold=old.threshold
        )
        fixtures[name] = digests[name]
    return SiteBaseline(baseline.site, baseline.threshold, page_types, fixtures)


def _comparable(result: PageTypeResult, url: str) -> bool:
    return any(c.url == url and c.outcome in ("ok", "changed") for c in result.pages)


def extraction_targets(result: GateResult, pages: Sequence[Page]) -> list[Page]:
    """Every compared page (matched or changed): what the callbacks get, on every run."""
    return [
        page
        for page in pages
        if page.page_type in result.page_types
        and _comparable(result.page_types[page.page_type], page.url)
    ]


def decide(
    result: GateResult,
    extraction: ExtractionReport | None,
    *,
    strict: bool = False,
    proposed: SiteBaseline | None = None,
    note: str = "",
) -> GateResult:
    """The verdict once the extraction is judged (pure), on every run.

    A block, a fetch failure, a missing baseline or an error keep their precedence. Then:
    a required field that fell is ``extraction_broken`` whatever the structure says; a
    changed structure whose callbacks failed (raised, yielded nothing, invalid items) is
    ``structure_changed``, a matching one ``extraction_broken``; complete extraction on a
    changed structure is ``drifted`` (``structure_changed`` when strict), on a matching
    one ``passed``, or ``drifted`` when an optional field fell (the warning's figures in
    the reason). ``extraction`` None: it could not run (``note`` says why), fail closed.
    """
    if result.status not in ("passed", "structure_changed"):
        return result
    changed = result.status == "structure_changed"
    offer = proposed.to_dict() if proposed is not None and changed else None
    data = extraction.to_dict() if extraction is not None else None
    if extraction is None:
        why = note or "extraction not judged"
        verdict: GateVerdict = "structure_changed" if changed else "extraction_broken"
        return replace(
            result,
            passed=False,
            verdict=verdict,
            reason=f"{result.reason} | {why}",
            proposed_baseline=offer,
            extraction=None,
        )
    warnings = extraction.warnings()
    warned = f" | extraction warnings: {'; '.join(warnings)}" if warnings else ""
    if extraction.broken or (extraction.failed and not changed):
        # Accepting a new structure would not bring the data back: nothing is proposed.
        reason = f"{result.reason} | extraction broken: {'; '.join(extraction.problems())}"
        return replace(
            result,
            passed=False,
            verdict="extraction_broken",
            reason=reason + warned,
            extraction=data,
            proposed_baseline=None,
        )
    if extraction.failed:
        why = "extraction failed: " + "; ".join(extraction.problems())
    elif strict and changed:
        why = "extraction complete, but the profile is strict (any drift fails)"
    else:
        why = ""
    if why:
        return replace(
            result,
            passed=False,
            verdict="structure_changed",
            reason=f"{result.reason} | {why}{warned}",
            proposed_baseline=offer,
            extraction=data,
        )
    if changed:
        reason = (
            result.reason.replace("structure changed:", "structure drifted:", 1)
            + f" | extraction complete: {extraction.describe()}{warned}"
        )
        return replace(
            result,
            passed=True,
            verdict="drifted",
            reason=reason,
            proposed_baseline=offer,
            extraction=data,
        )
    reason = f"{result.reason} | extraction complete: {extraction.describe()}{warned}"
    verdict = "drifted" if warnings else "passed"
    return replace(result, verdict=verdict, reason=reason, extraction=data)
