"""``python -m standins.plain_sites werkstatt --port 8200`` (or ``sayings``)."""

from __future__ import annotations

import argparse

from standins.plain_sites.corpus import KINDS
from standins.plain_sites.server import PlainSiteConfig, run


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m standins.plain_sites", description=__doc__)
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8200, help="0 picks a free port")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--items", type=int, default=120)
    args = parser.parse_args(argv)
    run(PlainSiteConfig(args.kind, args.host, args.port, args.seed, max(1, args.items)))


if __name__ == "__main__":
    main()
