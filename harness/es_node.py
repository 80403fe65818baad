"""A real Elasticsearch 9 node on loopback, built from Elastic's artifacts on Maven Central.

``harness/java/es-node`` holds a Maven project whose only dependencies are Elasticsearch's
server jar and its Netty4 transport plugin. Its small launcher (``platform.esnode``) builds a
production ``Node`` on 127.0.0.1 with the Netty4 plugin and a plugin that answers ``GET /`` like
Elasticsearch's ``rest-root`` module. See ``docs/elasticsearch-node.md`` for what such a node
has and lacks compared with the full distribution.

``ElasticsearchNode`` is one node, a one-node cluster by default (single-node discovery);
``ElasticsearchCluster`` runs N of them as one cluster on loopback (each with its own transport
port and data path, the others as discovery seeds).

``harness.es_build.ensure_built()`` builds the launcher (Maven, once per source change).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import tempfile
import urllib.request
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Self

from core.config import get_settings
from harness.base import ManagedProcess, ServiceError, free_port, wait_until
from harness.es_build import (
    LAUNCHER_CLASS,
    classpath,
    ensure_built,
    find_java_home,
)
from harness.foreground import run_in_foreground

# -- the node ----------------------------------------------------------------------------

# The harness's nodes live for a test run, a benchmark or a demo: the client compiler only
# and one serial collector halve the CPU a node spends starting and warming up (measured:
# 9.6 -> 5.5 CPU s to ready, 8.3 -> 4.0 for 9,000 writes and 200 searches) on a 2-core
# machine that runs several nodes at once. A long-lived node would want C2 and G1.
SHORT_LIFE_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


class ElasticsearchNode(ManagedProcess):
    """A single Elasticsearch 9 node on 127.0.0.1 (see the module docstring).

    ``data_dir`` is the node's home (``data/``, ``logs/``, ``config/`` beneath it). Given, it
    is used as-is and kept by ``stop()``, so a node started again on it finds its indices
    (restart tests). Left out, every ``start()`` gets a fresh directory under
    ``run_dir/es-data-<port>/`` that ``stop()`` deletes.

    ``settings`` are extra node settings, passed as ``-E key=value`` (they win over the
    launcher's defaults).

    Cluster membership (``ElasticsearchCluster`` sets it): ``seed_hosts`` (the other nodes'
    ``127.0.0.1:<transport port>``) switches the node from single-node discovery to joining
    a cluster; ``initial_master_nodes`` (every node's name) bootstraps that cluster, and is
    ignored by the launcher once the node's data holds a cluster state. ``transport_port``
    None: the first free one of 9300-9400.
    """

    start_timeout = 120.0
    stop_timeout = 30.0

    def __init__(
        self,
        *,
        port: int | None = None,
        run_dir: Path | None = None,
        heap: str = "512m",
        data_dir: Path | None = None,
        cluster_name: str = "platform-es",
        settings: Mapping[str, str] | None = None,
        transport_port: int | None = None,
        seed_hosts: Sequence[str] = (),
        initial_master_nodes: Sequence[str] = (),
    ) -> None:
        super().__init__(port=port, run_dir=run_dir)
        self.name = f"elasticsearch-{self.port}"
        self.heap = heap
        self.transport_port = transport_port
        self.seed_hosts = list(seed_hosts)
        self.initial_master_nodes = list(initial_master_nodes)
        self.cluster_name = cluster_name
        self.settings = dict(settings or {})
        self.data_root = self.run_dir / f"es-data-{self.port}"
        self.keep_data = data_dir is not None
        self.home: Path | None = Path(data_dir) if data_dir is not None else None

    @classmethod
    def ensure_built(cls) -> Path:
        """Build the Java launcher if needed (see the module-level ``ensure_built``)."""
        return ensure_built()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def prepare(self) -> None:
        ensure_built()
        if self.keep_data:
            assert self.home is not None
            self.home.mkdir(parents=True, exist_ok=True)
        else:
            self.data_root.mkdir(parents=True, exist_ok=True)
            self.home = Path(tempfile.mkdtemp(prefix="node-", dir=self.data_root))
        (self.home / "tmp").mkdir(exist_ok=True)

    def command(self) -> Sequence[str]:
        assert self.home is not None, "prepare() sets the node's home"
        java = find_java_home() / "bin" / "java"
        argv = [
            str(java),
            f"-Xms{self.heap}",
            f"-Xmx{self.heap}",
            *SHORT_LIFE_JVM_OPTIONS,
            "-XX:+ExitOnOutOfMemoryError",
            "-XX:-OmitStackTraceInFastThrow",
            # Elasticsearch's native access (FFM) and Lucene's Panama vector code.
            "--enable-native-access=ALL-UNNAMED",
            "--add-modules=jdk.incubator.vector",
            f"-Djava.io.tmpdir={self.home / 'tmp'}",
            "-Dfile.encoding=UTF-8",
            "-Djava.locale.providers=CLDR",
            "-Dlog4j2.disable.jmx=true",
            "-Dlog4j2.formatMsgNoLookups=true",
            "-cp",
            classpath(),
            LAUNCHER_CLASS,
            "--http-port", str(self.port),
            "--home", str(self.home),
            "--cluster-name", self.cluster_name,
            "--node-name", self.name,
        ]  # fmt: skip
        if self.transport_port is not None:
            argv += ["--transport-port", str(self.transport_port)]
        if self.seed_hosts:
            argv += ["--seed-hosts", ",".join(self.seed_hosts)]
        if self.initial_master_nodes:
            argv += ["--initial-master-nodes", ",".join(self.initial_master_nodes)]
        for key, value in self.settings.items():
            argv += ["-E", f"{key}={value}"]
        return argv

    def _get_json(self, path: str, timeout: float = 2.0) -> dict[str, object]:
        # No proxy from the environment: the node is on loopback.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"{self.url}{path}", timeout=timeout) as response:
            if response.status != 200:
                return {}
            return dict(json.load(response))

    def ready(self) -> bool:
        """``GET /`` answers with a version, and the cluster has recovered (not red)."""
        info = self._get_json("/")
        version = info.get("version")
        if not isinstance(version, dict) or not version.get("number"):
            return False
        health = self._get_json("/_cluster/health?wait_for_status=yellow&timeout=1s", 3.0)
        return health.get("status") in ("yellow", "green")

    def stop(self, grace: float | None = None) -> int | None:
        code = super().stop(grace)
        if not self.keep_data and self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)
            self.home = None
            with contextlib.suppress(OSError):
                self.data_root.rmdir()  # only if no other home is left in it
        return code

    def rss_bytes(self) -> int | None:
        """Resident memory of the node's JVM right now (Linux /proc), None if not running."""
        if self.pid is None or not self.alive():
            return None
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return None


# -- the cluster -------------------------------------------------------------------------


def _distinct_free_ports(count: int, taken: set[int]) -> list[int]:
    """``count`` free ports, none of them in ``taken`` nor repeated (the OS may hand the same
    ephemeral port out twice in a row)."""
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        if port not in taken and port not in ports:
            ports.append(port)
    return ports


class ElasticsearchCluster:
    """``nodes`` Elasticsearch nodes on 127.0.0.1 forming one cluster.

    Every node is master-eligible and holds data; each has its own HTTP port, transport port
    and home (``<data_dir>/node-<i>``), and names the others' transport addresses as discovery
    seeds. ``start()`` launches the nodes in parallel (none is ready alone: the first election
    needs a majority of the initial master nodes) and returns once all of them have joined and
    the cluster is green. ``stop_node(i)`` / ``start_node(i)`` stop and restart one node on its
    ports and home, so it rejoins with the shard copies it holds.

    ``data_dir`` given: the homes are kept by ``stop()`` (a cluster started again on it finds
    its indices). Left out: a fresh ``run_dir/es-cluster-<port>/`` that ``stop()`` deletes.
    ``base_port``: HTTP ports ``base_port + i`` and transport ports ``base_port + 100 + i``
    (the foreground command); default: free ports.
    """

    start_timeout = 180.0

    def __init__(
        self,
        *,
        run_dir: Path | None = None,
        nodes: int = 3,
        heap: str = "384m",
        data_dir: Path | None = None,
        cluster_name: str | None = None,
        settings: Mapping[str, str] | None = None,
        base_port: int | None = None,
    ) -> None:
        if nodes < 1:
            raise ValueError("a cluster needs at least one node")
        self.run_dir = Path(run_dir or get_settings().platform_run_dir)
        if base_port is not None:
            http_ports = [base_port + i for i in range(nodes)]
            transport_ports = [base_port + 100 + i for i in range(nodes)]
        else:
            http_ports = _distinct_free_ports(nodes, set())
            transport_ports = _distinct_free_ports(nodes, set(http_ports))
        # A name of its own: nothing else on this machine can join it by accident.
        self.cluster_name = cluster_name or f"platform-es-cluster-{http_ports[0]}"
        self.keep_data = data_dir is not None
        self.data_dir = Path(data_dir or self.run_dir / f"es-cluster-{http_ports[0]}")
        seeds = [f"127.0.0.1:{port}" for port in transport_ports]
        names = [f"elasticsearch-{port}" for port in http_ports]
        self.nodes: list[ElasticsearchNode] = [
            ElasticsearchNode(
                port=http_port,
                run_dir=self.run_dir,
                heap=heap,
                data_dir=self.data_dir / f"node-{i}",
                cluster_name=self.cluster_name,
                settings=settings,
                transport_port=transport_port,
                seed_hosts=[seed for seed in seeds if seed != f"127.0.0.1:{transport_port}"],
                initial_master_nodes=names,
            )
            for i, (http_port, transport_port) in enumerate(
                zip(http_ports, transport_ports, strict=True)
            )
        ]

    @property
    def urls(self) -> list[str]:
        """Every node's HTTP URL, stopped nodes included (a client skips dead ones)."""
        return [node.url for node in self.nodes]

    @property
    def url(self) -> str:
        """The nodes' URLs comma-separated: what ELASTICSEARCH_URL accepts."""
        return ",".join(self.urls)

    def running(self) -> list[int]:
        """Indexes of the nodes whose process is up."""
        return [i for i, node in enumerate(self.nodes) if node.alive()]

    def health(
        self, params: Mapping[str, str | int] | None = None, *, timeout: float = 2.0
    ) -> dict[str, object]:
        """``GET _cluster/health`` (with ``params``, e.g. ``{"wait_for_status": "green"}``)
        from a running node; ``{}`` when none answers or the wait timed out."""
        query = "&".join(f"{key}={value}" for key, value in (params or {}).items())
        for i in self.running():
            try:
                return self.nodes[i]._get_json(f"/_cluster/health?{query}", timeout)
            except (OSError, ValueError):  # URLError/HTTPError (408 on a timed-out wait)
                continue
        return {}

    def wait_for(self, *, status: str = "green", nodes: int | None = None, timeout: float) -> None:
        """Until the cluster has ``nodes`` nodes (default: every running one) and ``status``."""
        expected = len(self.running()) if nodes is None else nodes

        def reached() -> bool:
            wait: dict[str, str | int] = {
                "wait_for_nodes": expected,
                "wait_for_status": status,
                "timeout": "5s",
            }
            health = self.health(wait, timeout=7.0)
            return health.get("number_of_nodes") == expected and health.get("status") == status

        wait_until(
            reached,
            timeout=timeout,
            what=f"{self.cluster_name}: {expected} nodes and {status}",
            interval=0.5,
            log_tail=lambda: "\n".join(node.log_tail(10) for node in self.nodes),
        )

    def start(self) -> Self:
        ensure_built()  # once, before the parallel starts
        pending = [node for node in self.nodes if not node.alive()]
        with ThreadPoolExecutor(max_workers=len(self.nodes)) as pool:
            failures = [f for f in [pool.submit(node.start) for node in pending] if f.exception()]
        if failures:
            self.stop()
            raise ServiceError(f"{self.cluster_name}: {failures[0].exception()}")
        try:
            self.wait_for(status="green", nodes=len(self.nodes), timeout=self.start_timeout)
        except ServiceError:
            self.stop()
            raise
        return self

    def alive(self) -> bool:
        """Every node still runs."""
        return all(node.alive() for node in self.nodes)

    def stop_node(self, index: int) -> None:
        """Stop node ``index`` cleanly (SIGTERM); its home, ports and shard copies stay."""
        self.nodes[index].stop()

    def start_node(self, index: int) -> None:
        """Start node ``index`` again on its home and ports; returns once every node of the
        cluster has joined and it is green again (the node's copies recovered)."""
        self.nodes[index].start()
        self.wait_for(status="green", nodes=len(self.nodes), timeout=self.start_timeout)

    def stop(self) -> None:
        with ThreadPoolExecutor(max_workers=len(self.nodes)) as pool:
            list(pool.map(lambda node: node.stop(), self.nodes))
        if not self.keep_data:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def run_cluster_in_foreground(cluster: ElasticsearchCluster) -> int:
    """Start ``cluster``, print its URLs, keep it up until SIGINT/SIGTERM (0), or until a node
    dies (1)."""

    def died() -> str:
        dead = next(node for node in cluster.nodes if not node.alive())
        return f"{dead.name} exited unexpectedly; see {dead.log_path}"

    return run_in_foreground(
        cluster,
        ready=lambda: (
            f"{cluster.cluster_name}: {len(cluster.nodes)} nodes ready, green; "
            f"ELASTICSEARCH_URL={cluster.url} (logs in {cluster.run_dir}); Ctrl-C stops it"
        ),
        died=died,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Run a loopback Elasticsearch 9 node, or a cluster of N nodes (Maven "
        "Central artifacts), in the foreground until Ctrl-C."
    )
    parser.add_argument(
        "--port",
        type=int,
        default=9200,
        help="HTTP port; with --nodes N the nodes use PORT..PORT+N-1 and transport ports "
        "PORT+100..PORT+100+N-1",
    )
    parser.add_argument(
        "--nodes",
        type=int,
        default=1,
        help="1: a one-node cluster (single-node discovery); N > 1: N nodes forming one cluster",
    )
    parser.add_argument(
        "--heap", help="JVM heap per node, e.g. 512m or 1g (default 512m, 384m with --nodes)"
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="node home (with --nodes: the directory of the nodes' homes) to keep across runs "
        "(default: a fresh one)",
    )
    parser.add_argument("--run-dir", type=Path, help="where logs, PID file and data go")
    parser.add_argument("--cluster-name", help="default platform-es (one node)")
    parser.add_argument(
        "--build-only",
        action="store_true",
        help="only build the Java launcher (Maven; a no-op when up to date), then exit",
    )
    parser.add_argument(
        "-E",
        dest="settings",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Elasticsearch node setting (repeatable)",
    )
    args = parser.parse_args(argv)
    if args.build_only:
        project = ensure_built()
        print(f"es-node built: java -cp {classpath(project)} {LAUNCHER_CLASS}", flush=True)
        return 0
    settings: dict[str, str] = {}
    for item in args.settings:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"-E expects KEY=VALUE, got {item!r}")
        settings[key] = value
    if args.nodes < 1:
        parser.error(f"--nodes must be 1 or more, got {args.nodes}")
    if args.nodes > 1:
        cluster = ElasticsearchCluster(
            run_dir=args.run_dir,
            nodes=args.nodes,
            heap=args.heap or "384m",
            data_dir=args.data_dir,
            cluster_name=args.cluster_name,
            settings=settings,
            base_port=args.port,
        )
        return run_cluster_in_foreground(cluster)
    node = ElasticsearchNode(
        port=args.port,
        run_dir=args.run_dir,
        heap=args.heap or "512m",
        data_dir=args.data_dir,
        cluster_name=args.cluster_name or "platform-es",
        settings=settings,
    )
    return run_in_foreground(node)


if __name__ == "__main__":
    raise SystemExit(main())
