"""``python -m fingerprints``: baselines, the fixture check, the live gate, field coverage.

    python -m fingerprints baseline <site> [--from-url URL] [--threshold X] [-s NAME=VALUE ...]
    python -m fingerprints check [<site> ...] [--json]
    python -m fingerprints verify <site> [--base-url URL] [--json] [-s NAME=VALUE ...]
    python -m fingerprints coverage <site> <items.jsonl> [--update] [--tolerance X] [--json]

Exit codes: 0 passed / written, 1 the gate or coverage check failed, 2 bad usage or
an input that cannot be used (e.g. blocked pages offered as fixtures).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from core.blocks import classify
from crawlers.profiles import ProfileError
from fingerprints.baseline import (
    SITES_DIR,
    BaselineError,
    FingerprintConfig,
    compute_baseline,
    dumps,
    save_baseline,
    write_fixtures,
)
from fingerprints.coverage import (
    CoverageBaseline,
    compare_coverage,
    load_coverage_baseline,
    save_coverage_baseline,
)
from fingerprints.gate import GateResult, check_all, verify_site
from fingerprints.sampler import fetch_sample


def _setting(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def _add_settings_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-s",
        "--set",
        dest="settings",
        type=_setting,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a Scrapy setting for the sample fetch, as with scrapy crawl -s (repeatable)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m fingerprints", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--sites-dir", type=Path, default=SITES_DIR, help="where site directories live"
    )
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
    _add_settings_option(baseline)

    check = commands.add_parser("check", help="every site's fixtures against its baseline")
    check.add_argument("sites", nargs="*", help="default: every site directory")
    check.add_argument("--json", action="store_true")

    verify = commands.add_parser("verify", help="the live gate: fetch a sample and compare")
    verify.add_argument("site")
    verify.add_argument("--base-url", help="default: the site spider's base URL")
    verify.add_argument("--timeout", type=float, default=300.0)
    verify.add_argument("--json", action="store_true")
    _add_settings_option(verify)

    coverage = commands.add_parser("coverage", help="field fill rates of a job's items")
    coverage.add_argument("site")
    coverage.add_argument("items", type=Path, help="JSON lines, one item per line")
    coverage.add_argument(
        "--update", action="store_true", help="write these rates as the site's coverage baseline"
    )
    coverage.add_argument("--tolerance", type=float, help="allowed drop (with --update)")
    coverage.add_argument("--json", action="store_true")
    return parser


def _baseline(args: argparse.Namespace) -> int:
    if args.from_url:
        config = FingerprintConfig.for_site(args.site)
        if not config.sample():
            print(f"{args.site}: the profile declares no sample_paths", file=sys.stderr)
            return 2
        pages = fetch_sample(
            args.site, config.sample(), base_url=args.from_url, settings=dict(args.settings)
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
    baseline = compute_baseline(args.site, sites_dir=args.sites_dir, threshold=args.threshold)
    path = save_baseline(baseline, args.sites_dir)
    counts = ", ".join(f"{k}: {v.pages} page(s)" for k, v in baseline.page_types.items())
    print(f"wrote {path} ({counts}; threshold {baseline.threshold})")
    return 0


def _gate_output(results: Sequence[object], as_json: bool) -> int:
    gate_results = [r for r in results if isinstance(r, GateResult)]
    if as_json:
        print(dumps([r.to_dict() for r in gate_results]), end="")
    else:
        print("\n\n".join(r.summary() for r in gate_results))
    return 0 if gate_results and all(r.passed for r in gate_results) else 1


def _coverage(args: argparse.Namespace) -> int:
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


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "baseline":
            return _baseline(args)
        if args.command == "check":
            return _gate_output(check_all(args.sites, sites_dir=args.sites_dir), args.json)
        if args.command == "verify":
            result = verify_site(
                args.site,
                base_url=args.base_url,
                sites_dir=args.sites_dir,
                timeout=args.timeout,
                settings=dict(args.settings),
            )
            return _gate_output([result], args.json)
        return _coverage(args)
    except (BaselineError, FileNotFoundError, ProfileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
