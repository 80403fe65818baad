"""Chaos soak: a demo crawl under the full fault mix, every report figure against ES truth.

    .venv/bin/python -m bench.soak [--products 5000] [--workers 3] [--seed 7]
        [--kill-every 6 10] [--es-down-seconds 35] [--burst-seconds 1.5]
        [--parts-burst-seconds 5] [--slow-rate 0.5] [--slow-ms 1500] [--captcha-rate 0.01]
        [--dead-parts 4] [--no-drainer-kill] [--no-recrawl] [--takeover-limit 15]
        [--partitions 1]
        [--run-dir DIR] [--keep-data]

Starts its own demo shop, persistent Redis and ES node (``bench.stack``), crawls with
always-on workers while ``bench.chaos`` kills workers, restarts Redis, stops ES, bursts
503s, keeps the reviews API of a few products down, serves slow pages and kills the
spill drainer. Then it prints items expected / stored / duplicates / incomplete /
complete-without-parts, each figure of the job's report against the truth in
Elasticsearch (the report as the flow writes it into the jobs index, read back from
there), the time to drain and the spill's takeover after the drainer kill (killed once ES
is ready again; enforced: another worker drains within ``--takeover-limit``). A second,
fault-free job follows: the next run must fetch what the faults kept out, and its figures
must be exact too. Exit code 1 if any enforced check fails (info rows never count). Logs
of every service and worker stay in the run directory.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from bench import smoke
from bench.chaos import FaultPlan, run_chaos
from core.config import get_settings


def plan_from(args: argparse.Namespace) -> FaultPlan:
    default = FaultPlan()
    bursts = tuple(
        replace(
            burst,
            seconds=args.parts_burst_seconds if burst.paths else args.burst_seconds,
        )
        for burst in default.bursts
    )
    return FaultPlan(
        products=args.products,
        workers=args.workers,
        seed=args.seed,
        kill_every=tuple(args.kill_every) if args.kill_every[1] > 0 else None,  # type: ignore[arg-type]
        es_down_seconds=args.es_down_seconds,
        bursts=bursts,
        slow_rate=args.slow_rate,
        slow_ms=args.slow_ms,
        captcha_rate=args.captcha_rate,
        dead_parts=args.dead_parts,
        drainer_kill=not args.no_drainer_kill,
        recrawl=not args.no_recrawl,
        takeover_limit=args.takeover_limit,
        drain_timeout=args.drain_timeout,
        partitions=args.partitions,
    )


def main(argv: Sequence[str] | None = None) -> int:
    default = FaultPlan()
    parser = argparse.ArgumentParser(
        description="Chaos soak of the demo crawl: exact report figures under faults."
    )
    parser.add_argument("--products", type=int, default=default.products)
    parser.add_argument("--workers", type=int, default=default.workers)
    parser.add_argument("--seed", type=int, default=default.seed, help="catalog and fault choices")
    parser.add_argument(
        "--kill-every",
        type=float,
        nargs=2,
        metavar=("MIN", "MAX"),
        default=list(default.kill_every or (0, 0)),
        help="seconds between worker SIGKILLs (0 0: none)",
    )
    parser.add_argument("--es-down-seconds", type=float, default=default.es_down_seconds)
    parser.add_argument("--burst-seconds", type=float, default=1.5, help="503 bursts on every path")
    parser.add_argument(
        "--parts-burst-seconds",
        type=float,
        default=5.0,
        help="the 503 burst on the reviews API (longer than a request's retries)",
    )
    parser.add_argument("--slow-rate", type=float, default=default.slow_rate)
    parser.add_argument("--slow-ms", type=int, default=default.slow_ms)
    parser.add_argument(
        "--captcha-rate", type=float, default=0.01, help="product pages blocked once"
    )
    parser.add_argument(
        "--dead-parts",
        type=int,
        default=4,
        help="products whose reviews API answers 503 for the whole job",
    )
    parser.add_argument(
        "--no-drainer-kill",
        action="store_true",
        help="no SIGKILL of the spill drainer (a crawl too small to spill may never start one)",
    )
    parser.add_argument(
        "--no-recrawl",
        action="store_true",
        help="skip the second, fault-free job (everything complete, figures exact)",
    )
    parser.add_argument(
        "--takeover-limit",
        type=float,
        default=default.takeover_limit,
        help="seconds from the drainer kill until another worker drains the spill",
    )
    parser.add_argument(
        "--partitions",
        type=int,
        default=default.partitions,
        help="the site's frontier in this many partitions (FRONTIER_PARTITIONS)",
    )
    parser.add_argument("--drain-timeout", type=float, help="default: the demo profile's")
    parser.add_argument("--run-dir", type=Path, help="default: a new directory under the run dir")
    parser.add_argument(
        "--keep-data", action="store_true", help="keep the ES and Redis data after the run"
    )
    args = smoke.parse_args(
        parser,
        argv,
        products=80,
        workers=2,
        kill_every=[4.0, 6.0],
        es_down_seconds=4.0,
        slow_ms=200,
        dead_parts=2,
        no_drainer_kill=True,
        no_recrawl=True,
        partitions=3,
    )
    if args.products < 1 or args.workers < 1 or args.partitions < 1:
        parser.error("--products, --workers and --partitions must be positive")
    run_root = get_settings().platform_run_dir
    run_root.mkdir(parents=True, exist_ok=True)
    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix="soak-", dir=run_root))
    result = run_chaos(
        plan_from(args),
        run_dir,
        log=lambda line: print(line, flush=True),
        keep_data=args.keep_data,
    )
    print()
    print(result.table(), flush=True)
    return 1 if result.failures else 0


if __name__ == "__main__":
    sys.exit(main())
