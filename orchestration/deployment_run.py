"""Run a deployment and watch it to its final state: what ``make prefect-flow`` runs.

    python -m orchestration.deployment_run <flow> [--site SITE] [--param KEY=VALUE ...]
                                           [--force]

against the Prefect server of ``PREFECT_API_URL`` (compose: inside the worker's container;
the local stack runs the same through ``python -m orchestration.local_stack flow``).

- ``--param KEY=VALUE``: a flow parameter, the value read as JSON when it parses
  (``approval_timeout=0`` is a number) and as text otherwise; a malformed one stops before
  anything runs (exit 2).
- A paused deployment (its schedule stopped, in the UI or by ``register_flows``) is not
  run: one line says so and how to run it anyway (``--force``, ``FORCE=1``), exit 2.
- The run's own log lines (its steps' progress) are printed as they come; a run waiting
  for an approval says so.
- The run's final state decides the exit status: 0 for Completed only; any other state
  (``CompletedWithWarnings``, ``Incomplete``, ``NothingStored``, ``FailedClosed``, Failed,
  Crashed, Cancelled) ends with one line on stderr naming the deployment, the state, its
  message and where the flows' log lines are, and exit status 1.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

from core.config import REPO_ROOT, OperatorError
from crawlers.profiles import unknown_site

# `prefect deployment run` prints the new flow run's id on a line of its own.
_RUN_ID = re.compile(r"UUID: ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")
FINAL_STATES = ("COMPLETED", "FAILED", "CRASHED", "CANCELLED")
LOG_GRACE = 4.0  # seconds without a new line, once the run is final
USAGE = 2  # exit status of a run refused before it started
NOT_COMPLETED = 1  # exit status of a run that ended in any state but Completed
COMPOSE_LOGS = "flow logs: make prefect-logs"


def check_parameters(parameters: Sequence[str]) -> list[str]:
    """``KEY=VALUE`` flow parameters as given; a malformed one is an operator mistake."""
    for parameter in parameters:
        key, separator, _ = parameter.partition("=")
        if not separator or not key.strip():
            raise OperatorError(
                f"flow parameter {parameter!r} is not KEY=VALUE "
                '(e.g. PARAMS="base_url=http://127.0.0.1:8010 approval_timeout=0")'
            )
    return list(parameters)


def deployment_names(flow: str, site: str | None) -> tuple[str, str]:
    """(deployment, ``<flow name>/<deployment>``) of ``make prefect-flow FLOW=...``."""
    if flow in ("scrape-site", "scrape"):
        if not site:
            raise OperatorError("scrape-site needs PROFILE=<site>")
        return f"scrape-{site}", f"scrape-site/scrape-{site}"
    return flow, f"{flow}/{flow}"


def paused_line(deployment: str, flow: str, site: str | None) -> str:
    profile = f" PROFILE={site}" if site and deployment != flow else ""
    return (
        f"{deployment}: the deployment is paused (its schedule does not run), so it was not "
        f"started; to run it anyway: make prefect-flow FLOW={flow}{profile} FORCE=1 "
        "(or --force)"
    )


def is_paused(api_url: str, name: str) -> bool:
    """Whether the deployment ``<flow name>/<deployment>`` is paused; False when the
    server does not know it (Prefect's own run command then says so)."""
    flow_name, deployment = name.split("/", 1)
    path = f"/deployments/name/{urllib.parse.quote(flow_name)}/{urllib.parse.quote(deployment)}"
    try:
        found = _get(f"{api_url}{path}")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return False
        raise
    return bool(found.get("paused"))


def final_state(api_url: str, flow_run_id: str) -> dict[str, str]:
    """The flow run's state (type, name, message) as the Prefect server holds it."""
    state = _get(f"{api_url}/flow_runs/{flow_run_id}").get("state") or {}
    return {key: str(state.get(key) or "") for key in ("type", "name", "message")}


def completed(state: Mapping[str, str]) -> bool:
    """Plain Completed: not a completed state of another name (CompletedWithWarnings)."""
    return state["type"] == "COMPLETED" and state["name"] in ("", "Completed")


def state_line(deployment: str, state: Mapping[str, str], logs: str) -> str:
    """One line: the deployment, the run's final state and its message, where the logs are."""
    message = " ".join(state["message"].split()) or "no state message"
    return f"{deployment}: {state['name'] or state['type']}: {message} ({logs})"


def run_deployment(
    flow: str,
    site: str | None,
    parameters: Sequence[str] = (),
    *,
    api_url: str,
    env: Mapping[str, str],
    logs: str = COMPOSE_LOGS,
    ui_url: str | None = None,
    force: bool = False,
) -> int:
    """Start the deployment, follow the run to its final state; the exit status (module
    docstring). ``logs``: where the flows' log lines are, for the final line."""
    parameters = check_parameters(parameters)
    if site and (unknown := unknown_site(site)) is not None:
        print(unknown, file=sys.stderr)  # there is no deployment scrape-<site> to run
        return USAGE
    deployment, name = deployment_names(flow, site)
    if not force and is_paused(api_url, name):
        print(paused_line(deployment, flow, site), file=sys.stderr)
        return USAGE
    argv = [sys.executable, "-m", "prefect", "deployment", "run", name]
    for parameter in parameters:
        argv += ["--param", parameter]
    started = subprocess.run(
        argv, cwd=REPO_ROOT, env=dict(env), capture_output=True, text=True, check=False
    )
    found = _RUN_ID.search(started.stdout)
    if started.returncode != 0 or found is None:
        # Prefect refused the run (unknown deployment, bad parameter) and said why.
        sys.stderr.write(started.stdout + started.stderr)
        return started.returncode or NOT_COMPLETED
    flow_run_id = found.group(1)
    where = f" (Prefect UI: {ui_url})" if ui_url else ""
    print(f"{deployment}: flow run {flow_run_id}{where}")
    try:
        run_state = follow(api_url, flow_run_id)
    except (OSError, ValueError) as exc:
        print(f"{deployment}: flow run {flow_run_id}: state unreadable ({exc})", file=sys.stderr)
        return NOT_COMPLETED
    if completed(run_state):
        print(f"{deployment}: Completed {run_state['message']}".rstrip())
        return 0
    print(state_line(deployment, run_state, logs), file=sys.stderr)
    return NOT_COMPLETED


def follow(api_url: str, flow_run_id: str, *, poll: float = 1.0) -> dict[str, str]:
    """Print the run's own log lines (its steps' progress: crawl, drain, llm) as they come,
    until it reaches a final state; returns that state. Prefect's event stream (artifact
    updates by UUID) is not what an operator reads."""
    printed, waiting, quiet_since = 0, False, None
    while True:
        state = final_state(api_url, flow_run_id)
        logs = _post(
            f"{api_url}/logs/filter",
            {
                "logs": {"flow_run_id": {"any_": [flow_run_id]}},
                "sort": "TIMESTAMP_ASC",
                "offset": printed,
                "limit": 200,
            },
        )
        for log in logs:
            when = str(log.get("timestamp", ""))[11:19]
            level = logging.getLevelName(int(log.get("level", 20)))
            first = (str(log.get("message") or "").splitlines() or [""])[0]
            print(f"  {when} {level:<7} {first[:300]}")
        printed += len(logs)
        if state["type"] == "PAUSED" and not waiting:
            print(f"  the run waits: {state['name']} (answer it in the Prefect UI)")
        waiting = state["type"] == "PAUSED"
        if state["type"] in FINAL_STATES:
            # The run's last lines reach the API after its state (batched): wait for a
            # quiet few seconds before calling it done.
            quiet_since = None if logs else (quiet_since or time.monotonic())
            if quiet_since is not None and time.monotonic() - quiet_since >= LOG_GRACE:
                return state
        if not logs:
            time.sleep(poll)


def _get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=30) as answer:  # noqa: S310 (the Prefect API)
        return dict(json.loads(answer.read()))


def _post(url: str, body: dict[str, object]) -> list[dict[str, object]]:
    data, headers = json.dumps(body).encode(), {"Content-Type": "application/json"}
    request = urllib.request.Request(url, data=data, headers=headers)  # noqa: S310
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
        return list(json.loads(answer.read()))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("flow")
    parser.add_argument("--site")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--force", action="store_true", help="run the deployment even though it is paused"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    api_url = os.environ.get("PREFECT_API_URL", "").rstrip("/")
    if not api_url:
        raise OperatorError(
            "PREFECT_API_URL is not set: point it at the Prefect server's API "
            "(e.g. http://prefect-server:4200/api)"
        )
    return run_deployment(
        args.flow, args.site, args.param, api_url=api_url, env=os.environ, force=args.force
    )


if __name__ == "__main__":
    raise SystemExit(main())
