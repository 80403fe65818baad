"""``python -m standins.demo_site --host 127.0.0.1 --port 8000 --seed 7 --products 1200 ...``"""

from __future__ import annotations

import argparse
from pathlib import Path

from standins.demo_site.pages import LAYOUTS
from standins.demo_site.server import DemoSiteConfig, run


def parse_args(argv: list[str] | None = None) -> DemoSiteConfig:
    parser = argparse.ArgumentParser(prog="python -m standins.demo_site", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--products", type=int, default=1200)
    parser.add_argument("--revision", type=int, default=0)
    parser.add_argument("--layout", choices=LAYOUTS, default="v1")
    parser.add_argument("--access-log", type=Path, default=None, help="append JSONL here")
    parser.add_argument("--block-seed", type=int, default=None, help="defaults to --seed")
    args = parser.parse_args(argv)
    return DemoSiteConfig(
        host=args.host,
        port=args.port,
        seed=args.seed,
        products=args.products,
        revision=args.revision,
        layout=args.layout,
        access_log=args.access_log,
        block_seed=args.block_seed,
    )


def main(argv: list[str] | None = None) -> None:
    run(parse_args(argv))


if __name__ == "__main__":
    main()
