"""The structure gate on its evaluation set: false passes and false stops, per site.

    .venv/bin/python -m bench.gate [--site SITE ...] [--cases FILE] [--json]

Each case of ``fingerprints/evaluation/cases.toml`` (``fingerprints.evaluation.cases``) is a
page of a production site (a fixture, a block page, or one edited into what a live site
may serve) and the verdict the gate must give when it samples that page: judged as ``verify
<site> --page-type <type> --path <path>`` judges a live sample (structure, block rules,
the site's callbacks on the page against its fixtures), without network. Printed: one
table per site (case, kind, expected, verdict, seconds), then the counts. A *false pass*
is a failing verdict expected and ``passed``/``drifted`` given; a *false stop* the
reverse; another verdict than the expected one is a *mismatch*. Exit status 1 on any of
them, 2 when the set itself is malformed.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from fingerprints.evaluation.cases import CASES_FILE, CaseError, Outcome, judge_case, load_cases


def run(cases_file: Path = CASES_FILE, sites: Sequence[str] = ()) -> list[tuple[Outcome, float]]:
    """Every case (of ``sites``; none: all) judged, with the seconds each took."""
    results = []
    for case in load_cases(cases_file):
        if sites and case.site not in sites:
            continue
        started = time.perf_counter()
        outcome = judge_case(case)
        results.append((outcome, time.perf_counter() - started))
    return results


def table(results: Sequence[tuple[Outcome, float]]) -> list[str]:
    lines: list[str] = []
    for site in dict.fromkeys(outcome.case.site for outcome, _ in results):
        rows = [(o, s) for o, s in results if o.case.site == site]
        good = sum(o.ok for o, _ in rows)
        lines += ["", f"## {site}: {good} of {len(rows)} as expected", ""]
        lines.append("| case | kind | expected | verdict | s |")
        lines.append("|---|---|---|---|---|")
        for outcome, seconds in rows:
            mark = (
                ""
                if outcome.ok
                else (
                    " **FALSE PASS**"
                    if outcome.false_pass
                    else " **FALSE STOP**"
                    if outcome.false_stop
                    else " **MISMATCH**"
                )
            )
            lines.append(
                f"| {outcome.case.name} | {outcome.case.kind} | {outcome.case.expect} | "
                f"{outcome.verdict}{mark} | {seconds:.1f} |"
            )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gate", description=__doc__)
    parser.add_argument("--site", action="append", default=[], help="only this site's cases")
    parser.add_argument("--cases", type=Path, default=CASES_FILE, help="the evaluation set")
    parser.add_argument("--json", action="store_true", help="one JSON object per case")
    args = parser.parse_args(argv)
    # The spiders' own warnings about the edited pages are the cases' point, not news.
    # Nothing is fetched here; the facebook spider refuses to start without a session, so
    # it gets a placeholder when the environment has none. Both undone on return: main()
    # also runs inside the test process.
    import crawlers.settings

    disabled = logging.root.manager.disable
    session = getattr(crawlers.settings, "FACEBOOK_SESSION_COOKIES", None)
    logging.disable(logging.WARNING)
    if not session:
        crawlers.settings.FACEBOOK_SESSION_COOKIES = "c_user=0; xs=evaluation"
    try:
        results = run(args.cases, args.site)
    except CaseError as exc:
        print(f"bench.gate: {exc}", file=sys.stderr)
        return 2
    finally:
        logging.disable(disabled)
        if not session:
            vars(crawlers.settings).pop("FACEBOOK_SESSION_COOKIES", None)
    if not results:
        print(f"bench.gate: no case for {', '.join(args.site) or 'any site'} in {args.cases}")
        return 2
    outcomes = [outcome for outcome, _ in results]
    false_pass = [o for o in outcomes if o.false_pass]
    false_stop = [o for o in outcomes if o.false_stop]
    mismatch = [o for o in outcomes if not o.ok and not o.false_pass and not o.false_stop]
    if args.json:
        for outcome, seconds in results:
            print(
                json.dumps(
                    {
                        "site": outcome.case.site,
                        "case": outcome.case.name,
                        "kind": outcome.case.kind,
                        "expected": outcome.case.expect,
                        "verdict": outcome.verdict,
                        "ok": outcome.ok,
                        "seconds": round(seconds, 3),
                        "reason": outcome.reason,
                    }
                )
            )
    else:
        print("\n".join(table(results)))
        print()
        sites = len({o.case.site for o in outcomes})
        median = statistics.median(seconds for _, seconds in results)
        print(
            f"{len(outcomes)} cases over {sites} sites: {sum(o.ok for o in outcomes)} as "
            f"expected; false passes {len(false_pass)}, false stops {len(false_stop)}, "
            f"other mismatches {len(mismatch)} (median {median:.1f} s a case)"
        )
        for outcome in (*false_pass, *false_stop, *mismatch):
            print(
                f"- {outcome.case.site}: {outcome.case.name}: expected {outcome.case.expect}, "
                f"got {outcome.verdict}: {outcome.reason[-400:]}"
            )
    return 1 if false_pass or false_stop or mismatch else 0


if __name__ == "__main__":
    raise SystemExit(main())
