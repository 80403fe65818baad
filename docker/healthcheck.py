"""Container health checks for docker/compose.yaml (exit 0 healthy, 1 unhealthy).

    python /app/docker/healthcheck.py http URL      # GET answers 2xx
    python /app/docker/healthcheck.py worker SITE   # this container's worker heartbeats

The images have no curl: the checks use the standard library, plus the project's own
worker registry for ``worker``. A worker is healthy when a live heartbeat of SITE comes
from this host (the container's hostname): the process is up *and* talking to Redis,
which is what the scrape flow's preflight asks of it.
"""

from __future__ import annotations

import argparse
import socket
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence

TIMEOUT = 5.0


def check_http(url: str, timeout: float = TIMEOUT) -> tuple[bool, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310
            return 200 <= response.status < 300, f"{url}: HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        return False, f"{url}: HTTP {exc.code}"
    except (OSError, ValueError) as exc:
        return False, f"{url}: {exc}"


def check_worker(site: str, host: str | None = None) -> tuple[bool, str]:
    # Imported here: the http check must not pay for (or depend on) the project.
    import redis

    from core.config import get_settings, redacted
    from core.frontier.workers import WorkerRegistry
    from core.redis_client import RedisModeError, check_mode, connect

    settings = get_settings()
    if not settings.redis_url:
        return False, "REDIS_URL is not set"
    host = host or socket.gethostname()
    try:
        server = connect(
            settings.redis_url,
            cluster=settings.redis_cluster,
            socket_timeout=TIMEOUT,
            socket_connect_timeout=TIMEOUT,
        )
        try:
            check_mode(server, redacted(settings.redis_url))
            live = WorkerRegistry(server, site).live()
        finally:
            server.close()
    except RedisModeError as exc:  # REDIS_CLUSTER does not match the server
        return False, exc.message
    except redis.RedisError as exc:
        return False, f"redis: {type(exc).__name__}"
    mine = [info for info in live if info.host == host]
    if not mine:
        return False, f"{site}: no live heartbeat from {host} ({len(live)} from other hosts)"
    ids = ", ".join(info.worker_id for info in mine)
    return True, f"{site}: live worker(s) {ids}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    checks = parser.add_subparsers(dest="check", required=True)
    checks.add_parser("http").add_argument("url")
    worker = checks.add_parser("worker")
    worker.add_argument("site")
    worker.add_argument("--host", help="the heartbeat's host (default: this hostname)")
    args = parser.parse_args(argv)
    if args.check == "http":
        ok, message = check_http(args.url)
    else:
        ok, message = check_worker(args.site, args.host)
    print(message)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
