"""The fail-closed structure gate: may this site be scraped now?

``verify_site`` fetches a small live sample of each page type through the platform's
fetch stack (``fingerprints.sampler``, a Scrapy subprocess with the site's settings) and
compares it with the site's baseline; ``check_site`` does the same comparison on the
stored fixture pages (the daily check). Both return a ``GateResult`` and never raise:
any problem (an exception, no baseline, an empty sample, a page that could not be
fetched, a block page, a changed structure) is a result that did not pass. Neither
writes anything anywhere.

Precedence when several problems occur: ``error`` > ``no_baseline`` > ``blocked`` >
``fetch_failed`` > ``structure_changed``. A block page says nothing about the site's
structure, so it is reported as blocked, never as a structure change.

A structure change is then judged by the data (``fingerprints.extraction``): the page
type's own spider callback runs on the sample and its items are validated (item schema,
field-coverage baseline). The ``verdict``:

- ``passed``: the structure matches the baseline;
- ``drifted``: it does not, but extraction is complete (``passed`` stays True: the run
  goes on, with a warning and a proposed new baseline);
- ``structure_changed``: it does not and extraction fails, yields invalid items or loses a
  field (fail closed), or the profile asks for ``strict = true``;
- ``blocked``, ``fetch_failed``, ``no_baseline``, ``error``: as ``status``.

``status`` keeps its meaning (what the structural comparison found), so a drifted result
has status ``structure_changed`` and verdict ``drifted``.
"""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from core.blocks import BlockRules, classify
from core.config import ConfigurationError
from crawlers.profiles import PROFILES_DIR, SiteProfile
from fingerprints.baseline import (
    SITES_DIR,
    BaselineError,
    FingerprintConfig,
    SiteBaseline,
    fixture_pages,
    list_sites,
    load_baseline,
    restrict,
    sha256,
    site_dir,
)
from fingerprints.coverage import CoverageBaseline, fill_rates, load_coverage_baseline
from fingerprints.extraction import (
    ExtractionReport,
    Fetch,
    PageOutput,
    card_baselines,
    judge_extraction,
    run_callbacks,
    site_spider,
)
from fingerprints.sampler import Page, SamplerError, fetch_sample
from fingerprints.structure import Comparison, PageTypeBaseline, compare, fingerprint

GateStatus = Literal[
    "passed", "structure_changed", "blocked", "fetch_failed", "no_baseline", "error"
]
GateVerdict = Literal[
    "passed", "drifted", "structure_changed", "blocked", "fetch_failed", "no_baseline", "error"
]
PageOutcome = Literal["ok", "changed", "blocked", "fetch_failed", "no_baseline"]
Mode = Literal["live", "fixtures"]
PARTS = "_parts"  # the sampler's page type for the follow-up requests of callbacks
_PRECEDENCE: tuple[GateStatus, ...] = (
    "error",
    "no_baseline",
    "blocked",
    "fetch_failed",
    "structure_changed",
)
_OUTCOME_STATUS: dict[str, GateStatus] = {
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
            verdict = "DRIFTED (extraction complete, the run continues)"
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
        failed = (self.extraction or {}).get("failed_fields") or {}
        lines += [f"- extraction failed on {name}: {', '.join(f)}" for name, f in failed.items()]
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
                status = _OUTCOME_STATUS[check.outcome]
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
    status = next(s for s in _PRECEDENCE if s in problems)
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
    others = [s for s in _PRECEDENCE if s in problems and s != status]
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
    """The compared pages of every page type with a changed page: what the callbacks get."""
    changed = set(result.changed_page_types)
    return [
        page
        for page in pages
        if page.page_type in changed and _comparable(result.page_types[page.page_type], page.url)
    ]


def decide(
    result: GateResult,
    extraction: ExtractionReport | None,
    *,
    strict: bool = False,
    proposed: SiteBaseline | None = None,
    note: str = "",
) -> GateResult:
    """The verdict of a structural result once the extraction is judged (pure).

    Only a ``structure_changed`` status is open to judgement: a block, a fetch failure, a
    missing baseline or an error keep their precedence, and a match stays ``passed``.
    """
    if result.status != "structure_changed":
        return result
    extra: dict[str, Any] = {
        "proposed_baseline": proposed.to_dict() if proposed is not None else None,
        "extraction": extraction.to_dict() if extraction is not None else None,
    }
    if extraction is not None and extraction.complete and not strict:
        reason = (
            result.reason.replace("structure changed:", "structure drifted:", 1)
            + f" | extraction complete: {extraction.describe()}"
        )
        return replace(result, passed=True, verdict="drifted", reason=reason, **extra)
    if extraction is None:
        why = note or "extraction not judged"
    elif not extraction.complete:
        why = "extraction failed: " + "; ".join(extraction.problems())
    else:
        why = "extraction complete, but the profile is strict (any drift fails)"
    reason = f"{result.reason} | {why}"
    return replace(result, passed=False, verdict="structure_changed", reason=reason, **extra)


# -- entry points (never raise) ------------------------------------------------------------------


def _block_rules(site: str, profiles_dir: Path | None = None) -> BlockRules:
    directory = profiles_dir or PROFILES_DIR
    if not (directory / f"{site}.toml").exists():
        return BlockRules()
    return BlockRules.from_settings(SiteProfile.load(site, directory).settings)


def check_site(
    site: str,
    *,
    sites_dir: Path = SITES_DIR,
    profiles_dir: Path | None = None,
    page_types: Sequence[str] | None = None,
) -> GateResult:
    """The site's stored fixture pages against its baseline (the daily check).

    ``page_types``: judge only these (None: all); ``profiles_dir``: where the site's
    profile is (default: crawlers/profiles).
    """
    try:
        baseline, config = restrict(
            load_baseline(site, sites_dir),
            FingerprintConfig.for_site(site, profiles_dir),
            page_types,
        )
        pages = _fixture_sample(site, sites_dir, baseline.page_types if page_types else None)
        rules = _block_rules(site, profiles_dir)
        result = evaluate(site, pages, baseline, config=config, rules=rules, mode="fixtures")
        # No network here: a part a callback asks for (a reviews API) cannot be fetched,
        # so such a page type cannot show complete extraction and fails closed.
        result = judge_sample(result, pages, baseline, config, sites_dir=sites_dir)
    except BaselineError as exc:
        return failure(site, "no_baseline", str(exc), "fixtures")
    except Exception as exc:  # fail closed: a crash is a failed gate, never a pass
        return failure(site, "error", f"{type(exc).__name__}: {exc}", "fixtures")
    if result.passed:
        edited = _edited_fixtures(baseline, sites_dir)
        if edited:
            reason = result.reason + "; note: fixtures changed since the baseline: " + edited
            return replace(result, reason=reason)
    return result


def judge_sample(
    result: GateResult,
    pages: Sequence[Page],
    baseline: SiteBaseline,
    config: FingerprintConfig,
    *,
    sites_dir: Path = SITES_DIR,
    base_url: str | None = None,
    fetch: Fetch | None = None,
) -> GateResult:
    """A structure change judged by the data: the site's callbacks on the changed page
    types' pages, their items against the item schemas and the coverage baseline. The
    I/O edge of ``decide``: builds the spider, reads coverage.json, fetches parts."""
    if result.status != "structure_changed":
        return result
    proposed = propose_baseline(result, pages, baseline)
    callbacks = {name: pt.callback for name, pt in config.page_types.items()}
    # Another page type's callback is navigation even when that type is not judged here
    # (``--page-type``): its pages are never fetched as parts of this sample.
    declared = config.declared_callbacks
    shows = {name: pt.shows for name, pt in config.page_types.items() if pt.shows}
    try:
        coverage: CoverageBaseline | None = load_coverage_baseline(result.site, sites_dir)
    except BaselineError:
        coverage = None
    try:
        spider = site_spider(result.site, base_url)
        targets = extraction_targets(result, pages)
        changed = {page.page_type for page in targets}
        fixtures = run_callbacks(
            spider,
            _fixture_sample(result.site, sites_dir, changed),
            callbacks,
            declared=declared,
        )
        if coverage is not None:
            coverage = coverage_for_page_types(coverage, fixtures, changed)
        supplied = _supplied_by_card_pages(spider, result.site, fixtures, config, sites_dir)
        outputs = run_callbacks(
            spider, targets, callbacks, fetch=fetch, declared=declared, shows=shows
        )
        cards = card_baselines(result.site, fixtures, supplied)
        report = judge_extraction(outputs, coverage, cards)
    except (Exception, ConfigurationError) as exc:  # no spider, a bad profile: fail closed
        note = f"extraction could not run ({type(exc).__name__}: {exc})"
        return decide(result, None, strict=config.strict, proposed=proposed, note=note)
    return decide(result, report, strict=config.strict, proposed=proposed)


def coverage_for_page_types(
    coverage: CoverageBaseline, fixtures: Sequence[PageOutput], page_types: Iterable[str]
) -> CoverageBaseline:
    """The coverage baseline narrowed to what these page types fill on their own.

    The site's rates are measured on complete items, which may join a listing card and a
    detail page; judged alone, a detail page cannot fill what only the card supplies (a
    hermes product page has no category). So a field is expected of the sample only when
    the same callbacks fill it on the site's own fixtures. A page type whose fixtures
    yield no items offline (its items wait for parts from the network) keeps every field.
    """
    own: dict[str, float] = {}
    for page_type in page_types:
        items = [item for out in fixtures if out.page_type == page_type for item in out.items]
        if not items:
            return coverage
        for name, rate in fill_rates(items, coverage.fields)[1].items():
            own[name] = max(own.get(name, 0.0), rate)
    # At most the rate the page type reaches alone (a price only some hotel pages show).
    kept = {
        name: replace(rule, rate=min(rule.rate, own[name]))
        for name, rule in coverage.fields.items()
        if own.get(name, 0.0) > 0
    }
    return replace(coverage, fields=kept)


def _supplied_by_card_pages(
    spider: Any,
    site: str,
    fixtures: Sequence[PageOutput],
    config: FingerprintConfig,
    sites_dir: Path,
) -> set[str]:
    """Fields the pages a listing's cards lead to fill on every one of their own fixtures
    (offline): the item gets them from its page, so a card without them loses nothing. A
    field those pages fill only sometimes (a price shown for some stays) is the card's."""
    targets = {callback for output in fixtures for callback in output.card_callbacks}
    page_types = {name for name, callback in config.callbacks.items() if callback in targets}
    if not page_types:
        return set()
    outputs = run_callbacks(
        spider,
        _fixture_sample(site, sites_dir, page_types),
        config.callbacks,
        declared=config.declared_callbacks,
    )
    total, rates = fill_rates(item for output in outputs for item in output.items)
    return {name for name, rate in rates.items() if total and rate == 1.0}


def _fixture_sample(
    site: str, sites_dir: Path, page_types: Container[str] | None = None
) -> list[Page]:
    """The site's committed fixture pages as a sample (of ``page_types``; None: all)."""
    root = site_dir(site, sites_dir)
    return [
        Page(path.relative_to(root).as_posix(), page_type, 200, {}, path.read_bytes())
        for page_type, paths in fixture_pages(site, sites_dir).items()
        if page_types is None or page_type in page_types
        for path in paths
    ]


def _edited_fixtures(baseline: SiteBaseline, sites_dir: Path) -> str:
    """Fixtures added, edited or removed since the baseline was computed (a review hint)."""
    root = site_dir(baseline.site, sites_dir)
    recorded = {
        path: digest for entries in baseline.fixtures.values() for path, digest in entries.items()
    }
    current = {
        path.relative_to(root).as_posix(): path
        for page_type, paths in fixture_pages(baseline.site, sites_dir).items()
        if page_type in baseline.fixtures  # a subset check notes its own page types only
        for path in paths
    }
    changed = [p for p, f in current.items() if p in recorded and sha256(f) != recorded[p]]
    added = [p for p in current if p not in recorded]
    removed = [p for p in recorded if p not in current]
    parts = [
        f"{label} {', '.join(items)}"
        for label, items in (("edited", changed), ("new", added), ("removed", removed))
        if items
    ]
    return "; ".join(parts)


def check_all(
    sites: Iterable[str] | None = None,
    *,
    sites_dir: Path = SITES_DIR,
    profiles_dir: Path | None = None,
    page_types: Sequence[str] | None = None,
) -> list[GateResult]:
    """Every site directory's fixtures (or the named sites) against their baselines."""
    names = list(sites) if sites else list_sites(sites_dir)
    return [
        check_site(name, sites_dir=sites_dir, profiles_dir=profiles_dir, page_types=page_types)
        for name in names
    ]


def verify_site(
    site: str,
    *,
    base_url: str | None = None,
    sample: Mapping[str, Sequence[str]] | None = None,
    sites_dir: Path = SITES_DIR,
    timeout: float = 300.0,
    settings: Mapping[str, Any] | None = None,
    profiles_dir: Path | None = None,
    page_types: Sequence[str] | None = None,
) -> GateResult:
    """Fetch the site's sample pages live and compare them with its baseline.

    ``sample`` (page type -> paths) overrides the profile's ``sample_paths``;
    ``base_url`` overrides the spider's default base URL; ``settings`` are Scrapy
    settings for the sampler's crawl (see ``fetch_sample``); ``page_types`` judges
    only these types (None: every baseline type must be sampled); ``profiles_dir``
    is where the site's profile is, for this process and the sampler's spider.
    Fail-closed: never raises.
    """
    try:
        baseline, config = restrict(
            load_baseline(site, sites_dir),
            FingerprintConfig.for_site(site, profiles_dir),
            page_types,
        )
        plan = {
            k: tuple(v)
            for k, v in (sample or config.sample()).items()
            if v and (k in baseline.page_types or not page_types)
        }
        if not plan:
            return failure(
                site,
                "fetch_failed",
                "empty sample: no [fingerprint.page_types.*] sample_paths in the site profile",
            )
        pages = fetch_sample(
            site,
            plan,
            base_url=base_url,
            timeout=timeout,
            settings=settings,
            profiles_dir=profiles_dir,
        )
        result = evaluate(
            site, pages, baseline, config=config, rules=_block_rules(site, profiles_dir)
        )

        def fetch(urls: Sequence[str]) -> dict[str, Page]:
            # The parts a callback asks for, through the same fetch stack as the sample.
            parts = fetch_sample(
                site,
                {PARTS: tuple(urls)},
                base_url=base_url,
                timeout=timeout,
                settings=settings,
                profiles_dir=profiles_dir,
            )
            return {page.path: page for page in parts}

        return judge_sample(
            result, pages, baseline, config, sites_dir=sites_dir, base_url=base_url, fetch=fetch
        )
    except BaselineError as exc:
        return failure(site, "no_baseline", str(exc))
    except SamplerError as exc:
        return failure(site, "fetch_failed", f"sample fetch failed: {exc}")
    except Exception as exc:  # fail closed
        return failure(site, "error", f"{type(exc).__name__}: {exc}")
