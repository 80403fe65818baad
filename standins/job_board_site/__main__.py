"""``python -m standins.job_board_site --host 127.0.0.1 --port 8100 --seed 7 --jobs 300``"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from standins.job_board_site.server import CannotListen, JobBoardSiteConfig, run

EXIT_USAGE = 2


def parse_args(argv: list[str] | None = None) -> JobBoardSiteConfig:
    parser = argparse.ArgumentParser(prog="python -m standins.job_board_site", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100, help="0 picks a free port")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=300, help="number of postings (>= 1)")
    parser.add_argument("--access-log", type=Path, default=None, help="append JSONL here")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        fail(f"--jobs must be at least 1 (got {args.jobs}); a board needs a posting")
    return JobBoardSiteConfig(
        host=args.host,
        port=args.port,
        seed=args.seed,
        jobs=args.jobs,
        access_log=args.access_log,
    )


def fail(message: str) -> NoReturn:
    """An operator's mistake: one line on stderr, exit status 2, no traceback."""
    sys.stderr.write(f"python -m standins.job_board_site: {message}\n")
    raise SystemExit(EXIT_USAGE)


def main(argv: list[str] | None = None) -> None:
    config = parse_args(argv)
    try:
        run(config)
    except CannotListen as exc:
        fail(str(exc))


if __name__ == "__main__":
    main()
