"""What block classification costs per response, on the saved real pages of the six sites.

    .venv/bin/python -m bench.blocks [--repeat 15] [--rounds 5]

``core.fetch.blocks.classify`` runs on every response in the downloader middleware, before any
callback reads the page. For each real page (block pages included) it prints the median
time of one ``classify`` and, measured in the same run on the same bytes, of the least any
callback pays for that page: one ``lxml.html`` parse (baseline). Ratio = classify /
parse. Goals: the median ratio over the pages <= 1.5 (classification costs about what
one parse does: it scans the lower-cased body once per marker needle, and a callback
parses the page at least once more), and no page over 250 ms. Exit status 1 when a goal
fails or a page's verdict changes between calls.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import lxml.html

from bench import smoke
from core.fetch.blocks import classify

REAL_PAGES = Path(__file__).resolve().parents[2] / "shared" / "real-pages"
HEADERS = {"Content-Type": "text/html; charset=utf-8"}
GOAL_RATIO = 1.5
GOAL_PAGE_MS = 250.0


def median_seconds(call: Callable[[], object], repeat: int, rounds: int) -> float:
    """The median over ``rounds`` of the mean time of ``repeat`` calls."""
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(repeat):
            call()
        samples.append((time.perf_counter() - started) / repeat)
    return statistics.median(samples)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.blocks", description=__doc__)
    parser.add_argument("--repeat", type=int, default=15, help="calls per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per page (median)")
    parser.add_argument("--pages", type=Path, default=REAL_PAGES, help="folder of site folders")
    args = smoke.parse_args(parser, argv, repeat=2, rounds=1)
    pages = sorted(args.pages.glob("*/*.html"))
    if not pages:
        print(f"no saved pages under {args.pages}: pass --pages DIR")
        return 2
    failures: list[str] = []
    ratios: list[float] = []
    slowest = 0.0
    print(
        f"{'page':<44} {'verdict':<10} {'KiB':>6} {'classify ms':>12} {'parse ms':>9} {'ratio':>6}"
    )
    for path in pages:
        body = path.read_bytes()
        verdict = classify(200, HEADERS, body)
        took = median_seconds(partial(classify, 200, HEADERS, body), args.repeat, args.rounds)
        parse = median_seconds(partial(lxml.html.fromstring, body), args.repeat, args.rounds)
        if classify(200, HEADERS, body) != verdict:
            failures.append(f"{path.name}: verdict changed between calls")
        ratio = took / parse
        slowest = max(slowest, took * 1000)
        ratios.append(ratio)
        name = str(path.relative_to(args.pages))
        print(
            f"{name:<44} {verdict.kind:<10} {len(body) / 1024:>6.0f} "
            f"{took * 1000:>12.2f} {parse * 1000:>9.2f} {ratio:>6.2f}"
        )
    median_ratio = statistics.median(ratios)
    print(
        f"median ratio classify/parse over {len(pages)} pages: {median_ratio:.2f} "
        f"(goal <= {GOAL_RATIO}); worst {max(ratios):.2f}; slowest page {slowest:.1f} ms "
        f"(goal <= {GOAL_PAGE_MS:.0f})"
    )
    missed = []
    if median_ratio > GOAL_RATIO:
        missed.append(f"median ratio {median_ratio:.2f} > {GOAL_RATIO}")
    if slowest > GOAL_PAGE_MS:
        missed.append(f"slowest page {slowest:.1f} ms > {GOAL_PAGE_MS:.0f}")
    for failure in failures + missed:
        print(f"FAIL: {failure}")
    # A verdict that changes is wrong at any size; speed is judged on a full run.
    return 1 if failures else smoke.goals_status(args, not missed)


if __name__ == "__main__":
    raise SystemExit(main())
