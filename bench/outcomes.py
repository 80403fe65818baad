"""The truth matrix: does a run's final word say what happened?

    .venv/bin/python -m bench.outcomes [--products 40] [--only NAME ...] [--no-flows]
        [--smoke] [--run-dir DIR]

Each scenario is a combination the docs recommend or an operator meets (a site down, a
redirect to another host, a store refusing writes, a dead proxy, sessions with
``RENDER_MODE=auto`` behind each challenge style, a worker killed mid-job, an approval
nobody answers, ...), run on the local stack: stand-ins on loopback, a real Redis
frontier, ``scrapy crawl`` workers storing into an Elasticsearch node, and for the flow
scenarios a Prefect server, its worker and the Slack stub. Each row compares the run's
final word (close reason and exit status, or the flow's state and its Slack text) and
the job report's figures with what the stand-in served and what Elasticsearch holds.

A row is a mismatch when they disagree; a scenario whose run does not end by itself
within its budget is hung (its processes killed). Scenarios run one after another (the
same services, reset between them), so the matrix is deterministic. Exit status 1 on any
mismatch or hang. ``--smoke``: a handful of crawl scenarios, no flows.
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

from bench import smoke
from bench.outcome_cases import CRAWLS
from bench.outcome_runs import Services
from bench.outcome_verdicts import Outcome, Scenario
from core.config import get_settings

MISMATCH, HUNG, OK = "MISMATCH", "HUNG", "ok"


def scenarios(with_flows: bool) -> tuple[Scenario, ...]:
    if not with_flows:
        return CRAWLS
    from bench.outcome_flows import FLOWS

    return (*CRAWLS, *FLOWS)


def verdict(outcome: Outcome) -> str:
    if outcome.hung:
        return HUNG
    if outcome.mismatches or outcome.actual_word.startswith("(error"):
        return MISMATCH
    return OK


def slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")


def run_one(scenario: Scenario, services: Services, run_dir: Path) -> Outcome:
    services.reset()
    try:
        return scenario.run(services, run_dir / slug(scenario.name))
    except Exception as exc:  # a scenario that cannot run is a row, not the end of the matrix
        traceback.print_exc(file=sys.stderr)
        return Outcome("", f"(error: {type(exc).__name__})", 0, 0, note=str(exc)[:200])


def table(rows: Sequence[tuple[Scenario, Outcome, float]]) -> list[str]:
    header = (
        f"{'scenario':<30} {'expected word':<20} {'actual word':<26} "
        f"{'stored/served':>13} {'secs':>5}  verdict"
    )
    lines = [header, "-" * len(header)]
    for scenario, outcome, seconds in rows:
        mark = verdict(outcome)
        lines.append(
            f"{scenario.name:<30} {outcome.expected_word:<20} {outcome.actual_word:<26} "
            f"{f'{outcome.stored}/{outcome.served}':>13} {seconds:>5.0f}  {mark}"
        )
        for check in outcome.mismatches:
            lines.append(f"    {check.label}: {check.actual!r}, expected {check.expected!r}")
        if mark != OK and outcome.note:
            lines.append(f"    last word: {outcome.note}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.outcomes",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--products", type=int, default=40, help="the shop of the crawl rows")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="scenarios whose name has NAME")
    parser.add_argument("--no-flows", action="store_true", help="crawl scenarios only")
    parser.add_argument("--run-dir", type=Path, help="keep every log here")
    args = smoke.parse_args(parser, argv, no_flows=True, products=20)
    chosen = [
        s
        for s in scenarios(not args.no_flows)
        if (not args.smoke or s.smoke) and (not args.only or any(n in s.name for n in args.only))
    ]
    if not chosen:
        parser.error("no scenario matches --only")
    root = get_settings().platform_run_dir
    root.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        run_dir = args.run_dir or Path(stack.enter_context(tempfile.TemporaryDirectory(dir=root)))
        services = stack.enter_context(Services(run_dir / "services", args.products))
        rows: list[tuple[Scenario, Outcome, float]] = []
        for scenario in chosen:
            print(f"{scenario.name} ...", flush=True)
            started = time.monotonic()
            outcome = run_one(scenario, services, run_dir)
            rows.append((scenario, outcome, time.monotonic() - started))
            print(f"  {verdict(outcome)}: {outcome.actual_word}", flush=True)
        print()
        for line in table(rows):
            print(line)
        mismatches = sum(1 for _, o, _ in rows if verdict(o) == MISMATCH)
        hung = sum(1 for _, o, _ in rows if o.hung)
        print()
        print(f"{len(rows)} scenarios, {mismatches} mismatches, {hung} hung")
        print(f"machine: {platform.node()}, {platform.processor() or platform.machine()}")
        return 1 if mismatches or hung else 0


if __name__ == "__main__":
    sys.exit(main())
