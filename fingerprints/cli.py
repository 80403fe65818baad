"""``python -m fingerprints``: baselines, the fixture check, the live gate, field coverage.

    python -m fingerprints baseline <site> [--from-url URL] [--threshold X] [--accept-outliers]
                                    [-s NAME=VALUE ...]
    python -m fingerprints check [<site> ...] [--page-type T ...] [--json]
    python -m fingerprints verify <site> [--page-type T ... [--path P ...]] [--base-url URL]
                                  [--json] [-s NAME=VALUE ...]
    python -m fingerprints coverage <site> <items.jsonl> [--update] [--tolerance X] [--json]
    python -m fingerprints coverage <site> --from-fixtures

Every command takes ``--sites-dir DIR`` (baselines and fixtures, default
``FINGERPRINT_SITES_DIR``, else fingerprints/sites) and ``--profiles-dir DIR`` (site
profiles, default ``SITE_PROFILES_DIR``, else crawlers/profiles), before or after the
command name, for sites kept outside this repository: the same directories the scrape
flow's gate reads.

Exit codes: 0 passed / written, 1 the gate or coverage check failed (for ``baseline``:
some of its own fixtures fall below the threshold, nothing written), 2 bad usage or an
input that cannot be used (e.g. blocked pages offered as fixtures).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from core.config import fingerprint_sites_dir
from core.fetch.blocks import classify
from crawlers.profiles import PROFILES_DIR, ProfileError
from crawlers.runtime.sidecrawl import add_settings_option
from fingerprints.baselines.coverage import (
    CoverageBaseline,
    compare_coverage,
    load_coverage_baseline,
    save_coverage_baseline,
)
from fingerprints.baselines.fixtures import FixtureScore, score_fixtures, write_fixtures
from fingerprints.baselines.store import (
    BASELINE_FILE,
    SITES_DIR,
    BaselineError,
    FingerprintConfig,
    compute_baseline,
    dumps,
    list_sites,
    load_baseline,
    save_baseline,
    site_dir,
)
from fingerprints.evaluation.fixture_coverage import coverage_from_fixtures
from fingerprints.gate import GateResult, check_all, verify_site
from fingerprints.sampling.fetch import fetch_sample

SETTINGS_HELP = "a Scrapy setting for the sample fetch, as with scrapy crawl -s (repeatable)"


def _add_directory_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    # On the top parser with the defaults; on each command with SUPPRESS, so that an
    # option given after the command wins and one given before it is not reset.
    def default(value: Path) -> object:
        return value if top else argparse.SUPPRESS

    parser.add_argument(
        "--sites-dir",
        type=Path,
        default=default(fingerprint_sites_dir(SITES_DIR)),
        metavar="DIR",
        help="where site directories (fixtures, baseline.json) live (default: "
        "FINGERPRINT_SITES_DIR, else fingerprints/sites)",
    )
    parser.add_argument(
        "--profiles-dir",
        type=Path,
        default=default(PROFILES_DIR),
        metavar="DIR",
        help="where site profiles (<site>.toml) live (default: SITE_PROFILES_DIR, else "
        "crawlers/profiles)",
    )


def _add_page_type_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--page-type",
        dest="page_types",
        action="append",
        metavar="TYPE",
        help="judge only this page type (repeatable; default: every page type)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m fingerprints", description=__doc__.split("\n")[0]
    )
    _add_directory_options(parser, top=True)
    commands = parser.add_subparsers(dest="command", required=True)

    baseline = commands.add_parser(
        "baseline", help="compute a site's baseline.json from its fixture pages"
    )
    baseline.add_argument("site")
    baseline.add_argument(
        "--from-url",
        metavar="URL",
        help="first replace the fixtures with the profile's sample pages fetched from URL",
    )
    baseline.add_argument("--threshold", type=float, help="site threshold to record")
    baseline.add_argument(
        "--accept-outliers",
        action="store_true",
        help="write the baseline even though some of its own fixtures fall below the "
        "threshold (check will report them until they are replaced)",
    )
    add_settings_option(baseline, SETTINGS_HELP)

    check = commands.add_parser("check", help="every site's fixtures against its baseline")
    check.add_argument("sites", nargs="*", help="default: every site directory")
    _add_page_type_option(check)
    check.add_argument("--json", action="store_true")

    verify = commands.add_parser("verify", help="the live gate: fetch a sample and compare")
    verify.add_argument("site")
    _add_page_type_option(verify)
    verify.add_argument(
        "--path",
        dest="paths",
        action="append",
        metavar="PATH",
        help="fetch this path instead of the profile's sample_paths (repeatable; needs "
        "exactly one --page-type, the type of these pages)",
    )
    verify.add_argument("--base-url", help="default: the site spider's base URL")
    verify.add_argument("--timeout", type=float, default=300.0)
    verify.add_argument("--json", action="store_true")
    add_settings_option(verify, SETTINGS_HELP)

    coverage = commands.add_parser("coverage", help="field fill rates of a job's items")
    coverage.add_argument("site")
    coverage.add_argument("items", type=Path, nargs="?", help="JSON lines, one item per line")
    coverage.add_argument(
        "--from-fixtures",
        action="store_true",
        help="write coverage.json from the items a crawl of the site's fixtures gives",
    )
    coverage.add_argument(
        "--update", action="store_true", help="write these rates as the site's coverage baseline"
    )
    coverage.add_argument("--tolerance", type=float, help="allowed drop (with --update)")
    coverage.add_argument("--json", action="store_true")
    for command in (baseline, check, verify, coverage):
        _add_directory_options(command, top=False)
    return parser


def _baseline(args: argparse.Namespace) -> int:
    config = FingerprintConfig.for_site(args.site, args.profiles_dir)
    if args.from_url:
        if not config.sample():
            print(f"{args.site}: the profile declares no sample_paths", file=sys.stderr)
            return 2
        pages = fetch_sample(
            args.site,
            config.sample(),
            base_url=args.from_url,
            settings=dict(args.settings),
            profiles_dir=args.profiles_dir,
        )
        bad = []
        for page in pages:
            verdict = classify(page.status, page.headers, page.body)
            if page.error or not verdict.ok:
                bad.append(f"{page.page_type} {page.url}: {page.error or verdict}")
        if bad:
            print("refusing to store these as fixtures:\n  " + "\n  ".join(bad), file=sys.stderr)
            return 2
        by_type: dict[str, list[tuple[str, bytes]]] = {}
        for page in pages:
            by_type.setdefault(page.page_type, []).append((page.path, page.body))
        for path in write_fixtures(args.site, by_type, sites_dir=args.sites_dir):
            print(f"wrote {path}")
    baseline = compute_baseline(
        args.site, sites_dir=args.sites_dir, config=config, threshold=args.threshold
    )
    scores = score_fixtures(baseline, sites_dir=args.sites_dir, config=config)
    _print_scores(scores)
    outliers = [s for s in scores if not s.passed]
    if outliers and not args.accept_outliers:
        print(_outlier_advice(args.site, outliers, config), file=sys.stderr)
        return 1
    path = save_baseline(baseline, args.sites_dir)
    counts = ", ".join(f"{k}: {v.pages} page(s)" for k, v in baseline.page_types.items())
    print(f"wrote {path} ({counts}; threshold {baseline.threshold})")
    if outliers:
        print(
            f"accepted {len(outliers)} outlier(s): `check {args.site}` fails on them "
            "until they are replaced or the threshold lowered",
            file=sys.stderr,
        )
    return 0


def _print_scores(scores: Sequence[FixtureScore]) -> None:
    """Every fixture against the new baseline, worst first: outliers are seen before use."""
    print("fixtures against the new baseline (worst first):")
    for score in scores:
        mark = "ok" if score.passed else "BELOW THRESHOLD"
        print(f"  {score.similarity:.3f}  {score.path}  ({mark}, threshold {score.threshold:.2f})")
        if not score.passed:
            print("\n".join(f"         {line}" for line in score.describe()))


def _outlier_advice(
    site: str,
    outliers: Sequence[FixtureScore],
    config: FingerprintConfig,
) -> str:
    # A page passes at similarity >= threshold: round the suggestion down, never up.
    lowest = math.floor(min(s.similarity for s in outliers) * 100) / 100
    where = (
        f"the profile's [fingerprint] threshold (or [{config.page_types_table}.<type>] threshold)"
        if config.declared
        else "--threshold"
    )
    names = ", ".join(s.path for s in outliers)
    return (
        f"{site}: {len(outliers)} fixture(s) fall below the threshold of the baseline "
        f"computed from them, so `check {site}` would fail: {names}. baseline.json not "
        "written. Fix: add fixtures that also lack what these lack (an optional block then "
        "weighs less), remove the outliers if they are not representative, lower "
        f"{where} to {lowest:.2f} or less, or "
        "rerun with --accept-outliers to write the baseline anyway"
    )


def _gate_output(results: Sequence[object], as_json: bool) -> int:
    gate_results = [r for r in results if isinstance(r, GateResult)]
    if as_json:
        print(dumps([r.to_dict() for r in gate_results]), end="")
    else:
        print("\n\n".join(r.summary() for r in gate_results))
    return 0 if gate_results and all(r.passed for r in gate_results) else 1


def _coverage(args: argparse.Namespace) -> int:
    if args.from_fixtures:
        derived = coverage_from_fixtures(args.site, args.sites_dir, args.profiles_dir)
        path = save_coverage_baseline(derived, args.sites_dir)
        print(f"wrote {path} ({len(derived.fields)} fields from {derived.items} items)")
        return 0
    if args.items is None:
        print("error: give items.jsonl or --from-fixtures", file=sys.stderr)
        return 2
    items = [
        json.loads(line)
        for line in args.items.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    if args.update:
        baseline = CoverageBaseline.from_items(
            args.site, items, **({"tolerance": args.tolerance} if args.tolerance else {})
        )
        path = save_coverage_baseline(baseline, args.sites_dir)
        print(f"wrote {path} ({len(baseline.fields)} fields from {len(items)} items)")
        return 0
    report = compare_coverage(items, load_coverage_baseline(args.site, args.sites_dir))
    print(dumps(report.to_dict()) if args.json else report.summary(), end="\n" * (not args.json))
    return 0 if report.ok else 1


def _verify(args: argparse.Namespace) -> int:
    page_types = args.page_types or None
    sample = None
    if args.paths:
        if not page_types or len(page_types) != 1:
            print(
                "error: --path needs exactly one --page-type (the type of those pages), "
                "e.g. --page-type product --path /product/X",
                file=sys.stderr,
            )
            return 2
        sample = {page_types[0]: tuple(args.paths)}
    # A mistyped page type is the operator's to fix (exit 2), not a failed gate.
    if page_types and (site_dir(args.site, args.sites_dir) / BASELINE_FILE).exists():
        load_baseline(args.site, args.sites_dir).subset(page_types)
    result = verify_site(
        args.site,
        base_url=args.base_url,
        sample=sample,
        sites_dir=args.sites_dir,
        timeout=args.timeout,
        settings=dict(args.settings),
        profiles_dir=args.profiles_dir,
        page_types=page_types,
    )
    return _gate_output([result], args.json)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "baseline":
            return _baseline(args)
        if args.command == "check":
            if not args.sites and not list_sites(args.sites_dir):
                print(
                    f"error: no site directories under {args.sites_dir}: make one with "
                    "python -m crawlers.scaffold <site> <url>, or pass --sites-dir",
                    file=sys.stderr,
                )
                return 2
            results = check_all(
                args.sites,
                sites_dir=args.sites_dir,
                profiles_dir=args.profiles_dir,
                page_types=args.page_types or None,
            )
            return _gate_output(results, args.json)
        if args.command == "verify":
            return _verify(args)
        return _coverage(args)
    except (BaselineError, FileNotFoundError, ProfileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
