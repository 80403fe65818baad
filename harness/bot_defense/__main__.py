"""``python -m harness.bot_defense --upstream URL --level N``: run the stand-in in the
foreground until SIGINT/SIGTERM (docs/bot-defense.md)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from core.config import get_settings
from harness.bot_defense.certs import make_self_signed, spki_sha256
from harness.bot_defense.learn import LearnError, learn_with_chromium
from harness.bot_defense.server import (
    LEARN_PATH,
    MAX_LEVEL,
    Config,
    DefenseServer,
    close,
    serve_in_thread,
)
from harness.bot_defense.sessions import DIFFICULTY
from harness.bot_defense.styles import STYLES


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    run_dir = Path(get_settings().platform_run_dir)
    parser = argparse.ArgumentParser(
        prog="python -m harness.bot_defense",
        description="A local stand-in for DataDome / AWS WAF / Cloudflare-class bot "
        "defenses, in front of an HTTP upstream (docs/bot-defense.md).",
    )
    parser.add_argument("--upstream", required=True, help="http://host:port of the site")
    parser.add_argument("--level", type=int, required=True, choices=range(MAX_LEVEL + 1))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8443)
    parser.add_argument("--log", type=Path, default=None, help="JSONL log of every response")
    parser.add_argument("--cert", type=Path, default=run_dir / "bot-defense.crt")
    parser.add_argument("--key", type=Path, default=run_dir / "bot-defense.key")
    parser.add_argument("--cookie-ttl", type=float, default=600.0, help="seconds (level 3+)")
    parser.add_argument("--session-rate", type=int, default=20, help="requests (level 4)")
    parser.add_argument("--rate-window", type=float, default=10.0, help="seconds (level 4)")
    parser.add_argument("--difficulty", type=int, default=DIFFICULTY, help="proof-of-work bits")
    parser.add_argument("--chromium", default=None, help="Chromium to learn from (level 2+)")
    parser.add_argument(
        "--style", choices=STYLES, default="cloudflare", help="whose pages and challenge"
    )
    parser.add_argument(
        "--challenge-robots",
        action="store_true",
        help="challenge /robots.txt like any path (level 3+; it is exempt otherwise)",
    )
    parser.add_argument(
        "--allow-fingerprint",
        action="append",
        default=[],
        metavar="FP",
        help="a TLS fingerprint id to allow besides the learned ones (repeatable)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    make_self_signed(args.cert, args.key)
    config = Config(
        upstream=args.upstream,
        level=args.level,
        host=args.host,
        port=args.port,
        cert=args.cert,
        key=args.key,
        log=args.log,
        cookie_ttl=args.cookie_ttl,
        session_rate=args.session_rate,
        rate_window=args.rate_window,
        difficulty=args.difficulty,
        allow=tuple(args.allow_fingerprint),
        style=args.style,
        challenge_robots=args.challenge_robots,
    )
    server = DefenseServer(config)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    serve_in_thread(server)
    try:
        if server.learning:
            chromium = args.chromium or get_settings().chromium_executable()
            url = f"https://{config.host}:{config.port}{LEARN_PATH}"
            try:
                learn_with_chromium(chromium, url)
            except LearnError as exc:
                print(f"bot-defense: cannot start level {config.level}: {exc}", file=sys.stderr)
                return 2
            if not server.learned:
                print(
                    f"bot-defense: cannot start level {config.level}: Chromium fetched "
                    f"{url} but no TLS connection was fingerprinted",
                    file=sys.stderr,
                )
                return 2
            server.finish_learning()
        allowed = ", ".join(server.allowlist) or "-"
        print(
            f"bot-defense level {config.level} ({config.style}) on "
            f"https://{config.host}:{config.port} -> "
            f"{config.upstream}; cert {config.cert} (SPKI sha256 {spki_sha256(config.cert)}); "
            f"allowed TLS fingerprints: {allowed}",
            flush=True,
        )
        for fid, full in server.allowlist.items():
            print(f"  {fid}: {full}", flush=True)
        stop.wait()
        return 0
    finally:
        close(server)


if __name__ == "__main__":
    raise SystemExit(main())
