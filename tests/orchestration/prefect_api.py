"""Prefect's REST API for tests (the flows under test use Prefect's own client)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.prefect_server import PrefectServer


def api(
    server: PrefectServer, path: str, body: dict[str, Any] | None = None, method: str | None = None
) -> Any:
    """Prefect's REST API (POST with a body, else GET, unless ``method`` says); 502/503
    (SQLite busy under load) are retried, as Prefect's own client does."""
    for attempt in range(6):
        request = urllib.request.Request(
            f"{server.url}{path}",
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Content-Type": "application/json"},
            method=method or ("POST" if body is not None else "GET"),
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                raw = answer.read()
            return json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            if exc.code not in (502, 503) or attempt == 5:
                raise
            time.sleep(0.5 * 2**attempt)
    return None


REPO_ROOT = Path(__file__).resolve().parents[2]


def register_deployments(
    server: PrefectServer,
    extra_env: Mapping[str, str] | None = None,
    local_workers: int = 2,
    options: Sequence[str] = (),
) -> str:
    """``python -m orchestration.register_flows`` against ``server``, with none of the
    caller's ``PREFECT_*`` variables (and ``extra_env``, e.g. SITE_PROFILES_DIR or
    SLACK_WEBHOOK_URL, and ``options``, e.g. --alert-grace); returns what it printed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(extra_env or {})
    env.update(server.client_environment())
    argv = ["--local-workers", str(local_workers), *options]
    done = subprocess.run(
        [sys.executable, "-m", "orchestration.register_flows", *argv],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def delete_deployments(server: PrefectServer) -> None:
    """Every deployment of the (session-wide) server: a module that counts deployments
    starts from a clean slate, whatever other modules registered."""
    for deployment in api(server, "/deployments/filter", {}):
        api(server, f"/deployments/{deployment['id']}", method="DELETE")
