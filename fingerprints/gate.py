"""The fail-closed structure gate: may this site be scraped now?

``verify_site`` fetches a small live sample of each page type through the platform's fetch
stack (``fingerprints.sampling.fetch``) and compares it with the site's baseline;
``check_site`` does the same on the stored fixtures (the daily check). Both return a
``GateResult`` and never raise or write: any problem is a result that did not pass
(precedence ``error`` > ``no_baseline`` > ``blocked`` > ``fetch_failed`` >
``structure_changed``). A changed structure is then judged by the data: ``drifted``
(passes, with a warning) or ``structure_changed`` (fails closed).

Reads: ``fingerprints/sites/<site>/`` (baseline, coverage, fixtures) and the profile's
``[fingerprint]`` table. Verdicts: docs/fingerprints.md "The gate".
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from scrapy.exceptions import NotConfigured

from core.config import ConfigurationError
from core.fetch.blocks import BlockRules
from core.items_schema import UnknownItemType
from crawlers.items import schema_for
from crawlers.profiles import PROFILES_DIR, SiteProfile
from fingerprints.baselines.coverage import CoverageBaseline, fill_rates, load_coverage_baseline
from fingerprints.baselines.store import (
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
from fingerprints.extraction.callbacks import (
    Fetch,
    NoSpider,
    PageOutput,
    run_callbacks,
    site_spider,
)
from fingerprints.extraction.evidence import EvidenceRules
from fingerprints.extraction.fields import DEFAULT_FLOOR, FieldPolicy
from fingerprints.extraction.judgement import judge_extraction, page_type_baselines
from fingerprints.sampling.fetch import Page, SamplerError, fetch_sample
from fingerprints.verdicts.decisions import (
    check_page,
    decide,
    evaluate,
    extraction_targets,
    propose_baseline,
)
from fingerprints.verdicts.results import (
    PARTS,
    GateResult,
    GateStatus,
    GateVerdict,
    PageCheck,
    PageOutcome,
    PageTypeResult,
    failure,
)

# The gate's API in one place (the flows, the CLI and tests import it from here).
__all__ = [
    "PARTS",
    "GateResult",
    "GateStatus",
    "GateVerdict",
    "Page",
    "PageCheck",
    "PageOutcome",
    "PageTypeResult",
    "check_all",
    "check_page",
    "check_site",
    "decide",
    "evaluate",
    "evidence_rules",
    "extraction_targets",
    "failure",
    "field_policy",
    "judge_sample",
    "propose_baseline",
    "verify_site",
]

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
    """The sample judged by its data, on every run (a matching structure too): the site's
    callbacks on every compared page, their records against the item schemas and against
    the same callbacks' records on the site's fixtures, per page type and field. The I/O
    edge of ``decide``: builds the spider, reads the fixtures and coverage.json, fetches
    parts."""
    if result.status not in ("passed", "structure_changed"):
        return result
    changed = result.status == "structure_changed"
    proposed = propose_baseline(result, pages, baseline) if changed else None
    targets = extraction_targets(result, pages)
    judged = {page.page_type for page in targets}
    callbacks = config.callbacks
    if not changed and not any(callbacks.get(name) for name in judged):
        note = "; extraction not judged: no callback declared"
        return replace(result, reason=result.reason + note)
    # Another page type's callback is navigation even when that type is not judged here
    # (``--page-type``): its pages are never fetched as parts of this sample.
    declared = config.declared_callbacks
    rules = evidence_rules(config)
    try:
        coverage: CoverageBaseline | None = load_coverage_baseline(result.site, sites_dir)
    except BaselineError:
        coverage = None
    try:
        spider = site_spider(result.site, base_url)
    except (NotConfigured, ConfigurationError, NoSpider) as exc:
        # A setting the crawl needs and this process lacks (a session secret), or no spider
        # here to call (a site kept outside the repository): the crawl itself refuses to
        # start, saying so; a matching structure is all there is to judge.
        note = f"extraction could not run ({type(exc).__name__}: {exc})"
        if changed:
            return decide(result, None, strict=config.strict, proposed=proposed, note=note)
        return replace(result, reason=f"{result.reason}; extraction not judged: {note}")
    except Exception as exc:  # no spider, a crash building it: fail closed
        note = f"extraction could not run ({type(exc).__name__}: {exc})"
        return decide(result, None, strict=config.strict, proposed=proposed, note=note)
    try:
        fixtures = run_callbacks(
            spider,
            _fixture_sample(result.site, sites_dir, judged),
            callbacks,
            declared=declared,
            rules=rules,
            visible=True,
        )
        supplied = _supplied_by_card_pages(spider, result.site, fixtures, config, sites_dir)
        baselines = page_type_baselines(fixtures, coverage, supplied)
        if not changed:
            # Page types without a callback are not judged when nothing changed.
            targets = [page for page in targets if callbacks.get(page.page_type)]
        outputs = run_callbacks(
            spider, targets, callbacks, fetch=fetch, declared=declared, rules=rules, visible=True
        )
        report = judge_extraction(
            outputs,
            baselines,
            field_policy(config, fixtures),
            # Offline, a matching structure's parts are the fixtures' own: nothing to judge.
            parts_required=changed or fetch is not None,
        )
    except (Exception, ConfigurationError) as exc:  # no spider, a bad profile: fail closed
        note = f"extraction could not run ({type(exc).__name__}: {exc})"
        return decide(result, None, strict=config.strict, proposed=proposed, note=note)
    return decide(result, report, strict=config.strict, proposed=proposed)


def evidence_rules(config: FingerprintConfig) -> dict[str, EvidenceRules]:
    """Page type -> its ``shows`` and ``absent`` rules (fingerprints.extraction.evidence)."""
    return {
        name: EvidenceRules(pt.shows, pt.absent, pt.empty)
        for name, pt in config.page_types.items()
        if pt.shows or pt.absent or pt.empty
    }


def field_policy(config: FingerprintConfig, outputs: Sequence[PageOutput] = ()) -> FieldPolicy:
    """The site's required fields and floor; without a declared list, the required fields
    of the item type ``outputs`` yield (what an item is invalid without)."""
    required = set(config.required)
    if not required:
        for item in (item for output in outputs for item in output.items):
            try:
                required = set(schema_for(item).required)
                break
            except UnknownItemType:
                continue
    return FieldPolicy(required=frozenset(required), floor=config.floor or DEFAULT_FLOOR)


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
    # Filled on every item, whatever the pages show: a price only dated hotel pages carry
    # is still the card's to give.
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
