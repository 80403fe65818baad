"""The Prefect stack as local processes, for machines without Docker (``make prefect-*``).

    python -m orchestration.local_stack up     # Redis, ES, demo site, Prefect server + worker
    python -m orchestration.local_stack flow scrape-site --site demo [--param KEY=VALUE ...]
                                              [--force]
    python -m orchestration.local_stack status | ui | logs | down
    python -m orchestration.local_stack demo      # up + the scrape-demo deployment, end to end

Each process runs in its own session with its PID and log under ``$PLATFORM_RUN_DIR/stack``;
deployments are registered in local mode. Reads ``PLATFORM_RUN_DIR`` and the
``LOCAL_STACK_*_PORT`` variables; a port held by something else stops ``up`` with one line.
Commands, parameters and exit status: docs/orchestration.md "Operations".
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from core.config import REPO_ROOT, OperatorError, get_settings
from crawlers.profiles import unknown_site
from harness.base import ManagedProcess, PortInUse, stop_recorded
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.prefect_server import PrefectServer, PrefectWorker
from harness.proc import recorded_pid
from harness.redis_server import RedisServer
from orchestration import deployment_run

PORTS = {"redis": 16379, "elasticsearch": 19200, "prefect": 4200, "demo": 8000}
PORT_VARIABLE = "LOCAL_STACK_{}_PORT"
LOCAL_WORKERS = 2
POOL = "scraping"


def stack_ports() -> dict[str, int]:
    """``PORTS``, each overridden by its ``LOCAL_STACK_<NAME>_PORT`` when set."""
    ports = dict(PORTS)
    for name in PORTS:
        variable = PORT_VARIABLE.format(name.upper())
        value = os.environ.get(variable, "").strip()
        if not value:
            continue
        if not value.isdigit() or not 0 < int(value) < 65536:
            raise OperatorError(f"{variable}={value!r} is not a TCP port (1-65535)")
        ports[name] = int(value)
    if len(set(ports.values())) != len(ports):
        raise OperatorError(f"the local stack's ports must differ: {ports}")
    return ports


def stack_dir() -> Path:
    return state_path().parent


def state_path() -> Path:
    return get_settings().local_stack_state_path()


def read_state() -> dict[str, str]:
    return get_settings().local_stack_state()


def client_env(state: dict[str, str]) -> dict[str, str]:
    """The environment of everything that talks to this stack."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(
        {
            "REDIS_URL": state["redis_url"],
            "ELASTICSEARCH_URL": state["elasticsearch_url"],
            "DEMO_SITE_URL": state["demo_site_url"],
            "PREFECT_API_URL": state["prefect_api_url"],
            "PREFECT_HOME": state["prefect_home"],
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_RESULTS_PERSIST_BY_DEFAULT": "true",
            "PLATFORM_RUN_DIR": str(get_settings().platform_run_dir),
        }
    )
    return env


def up() -> dict[str, str]:
    state = read_state()
    ports = stack_ports()
    if state and state.get("prefect_api_url") and _stack_alive():
        print(f"stack already up: Prefect UI {state['prefect_ui']}")
        return state
    run_dir = stack_dir()
    run_dir.mkdir(parents=True, exist_ok=True)
    redis_server = RedisServer(
        port=ports["redis"], run_dir=run_dir, persistent=True, data_dir=run_dir / "redis-data"
    )
    es_node = ElasticsearchNode(
        port=ports["elasticsearch"], run_dir=run_dir, data_dir=run_dir / "es-home"
    )
    site = DemoSite(port=ports["demo"], run_dir=run_dir)
    server = PrefectServer(
        port=ports["prefect"], run_dir=run_dir, ui=True, home=run_dir / "prefect"
    )
    services: list[ManagedProcess] = [redis_server, es_node, site, server]
    # Every port first: a stack half started on another one's ports is worse than none.
    for service in services:
        try:
            service.check_port_free()
        except PortInUse as exc:
            variable = PORT_VARIABLE.format(_port_name(ports, service.port).upper())
            raise OperatorError(f"{exc} (this stack's port: set {variable})") from None
    started: list[ManagedProcess] = []
    try:
        for service in services:
            service.start()
            started.append(service)
            print(f"  {service.name:<22} {service.url}  (pid {service.pid})")
    except PortInUse as exc:
        for service in reversed(started):
            service.stop()
        raise OperatorError(str(exc)) from None
    state = {
        "redis_url": redis_server.url,
        "elasticsearch_url": es_node.url,
        "demo_site_url": site.url,
        "prefect_api_url": server.url,
        "prefect_ui": server.ui_url,
        "prefect_home": str(server.home),
    }
    state_path().write_text(json.dumps(state, indent=2))
    env = client_env(state)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestration.register_flows",
            "--local-workers",
            str(LOCAL_WORKERS),
        ],
        cwd=REPO_ROOT,
        env=env,
        check=True,
    )
    worker_env = {
        k: env[k] for k in ("REDIS_URL", "ELASTICSEARCH_URL", "DEMO_SITE_URL", "PLATFORM_RUN_DIR")
    }
    worker = PrefectWorker(server, pool=POOL, run_dir=run_dir, extra_env=worker_env, cwd=REPO_ROOT)
    worker.start()
    print(f"  {worker.name:<22} {worker.url}  (pid {worker.pid})")
    print(f"\nPrefect UI: {server.ui_url}   (stop everything: make prefect-down)")
    return state


def _port_name(ports: dict[str, int], port: int) -> str:
    return next(name for name, value in ports.items() if value == port)


def _stack_alive() -> bool:
    """Whether this run directory's stack still runs (its Prefect server is the process
    its PID file names)."""
    return any(recorded_pid(path) is not None for path in stack_dir().glob("prefect-server*.pid"))


STOP_GRACE = 5.0  # seconds a stopped process gets before the next, harder signal
# SIGINT first: the Prefect worker and scrapy treat it as a prompt shutdown; a process
# that ignores it (a Prefect worker still starting) gets SIGTERM, then SIGKILL.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)


def down() -> None:
    """Stop what the stack's and the local jobs' PID files name, each only if it is still
    the process that wrote it (``harness.base.stop_recorded``); every PID file is removed."""
    pid_files = sorted(stack_dir().glob("*.pid")) + sorted(
        (get_settings().platform_run_dir / "jobs").glob("*/*.pid")
    )
    for pid_file, info in stop_recorded(pid_files, STOP_SIGNALS, STOP_GRACE):
        print(f"  stopped {pid_file.stem} (pid {info.pid})")
    state_path().unlink(missing_ok=True)


def worker_log() -> Path:
    """The local Prefect worker's log: the flows' own log lines are there."""
    return stack_dir() / f"prefect-worker-{POOL}.log"


def run_flow(
    flow: str, site: str | None, parameters: Sequence[str] = (), *, force: bool = False
) -> int:
    """``orchestration.deployment_run`` on this stack's Prefect server."""
    parameters = deployment_run.check_parameters(parameters)
    if site and (unknown := unknown_site(site)) is not None:
        print(unknown, file=sys.stderr)  # there is no deployment scrape-<site> to run
        return deployment_run.USAGE
    state = read_state()
    if not state:
        print("the stack is not up: run `make prefect-up` first", file=sys.stderr)
        return deployment_run.USAGE
    return deployment_run.run_deployment(
        flow,
        site,
        parameters,
        api_url=state["prefect_api_url"],
        env=client_env(state),
        logs=f"worker log: {worker_log()}",
        ui_url=state["prefect_ui"],
        force=force,
    )


def demo() -> int:
    state = up()
    code = run_flow("scrape-site", "demo")
    print(
        "\nWhere to look:\n"
        f"  Prefect UI         {state['prefect_ui']}  (flow runs, artifacts: scrape-demo-report)\n"
        f"  Elasticsearch      {state['elasticsearch_url']}  "
        "indices: items-demo, chunks-demo, jobs\n"
        f"  demo shop          {state['demo_site_url']}\n"
        '  search             .venv/bin/python -m search "waterproof dog bed" --site demo -k 5'
        "  (finds this stack by itself)\n"
        "  stop the stack     make prefect-down"
    )
    return code


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("up")
    commands.add_parser("down")
    commands.add_parser("status")
    commands.add_parser("ui")
    commands.add_parser("logs")
    commands.add_parser("demo")
    deployment_run.add_arguments(commands.add_parser("flow"))
    args = parser.parse_args(argv)
    if args.command == "up":
        up()
    elif args.command == "down":
        down()
    elif args.command == "demo":
        return demo()
    elif args.command == "flow":
        return run_flow(args.flow, args.site, args.param, force=args.force)
    elif args.command == "ui":
        state = read_state()
        print(state.get("prefect_ui", "the stack is not up: make prefect-up"))
    elif args.command == "status":
        state = read_state()
        print(json.dumps(state, indent=2) if state else "the stack is not up")
        for pid_file in sorted(stack_dir().glob("*.pid")):
            pid = pid_file.read_text().strip()
            up_now = recorded_pid(pid_file) is not None
            print(f"  {pid_file.stem:<28} pid {pid} {'up' if up_now else 'DOWN'}")
    elif args.command == "logs":
        logs = sorted(str(path) for path in stack_dir().glob("*.log"))
        if not logs:
            print("no logs yet")
            return 1
        os.execvp("tail", ["tail", "-n", "50", "-F", *logs])  # noqa: S606
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
