"""A flow runs against the real local Prefect server and its run is recorded there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

from harness.prefect_server import PrefectServer

FLOW_SCRIPT = textwrap.dedent(
    """
    from prefect import flow, task

    @task(retries=1, retry_delay_seconds=0)
    def double(x: int) -> int:
        return 2 * x

    @flow(name="harness-smoke")
    def smoke(n: int) -> int:
        return sum(double.map(range(n)).result())

    print("RESULT", smoke(4))
    """
)


def _post(url: str, body: dict[str, object]) -> object:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_flow_runs_against_local_server(prefect_server: PrefectServer, tmp_path: Path) -> None:
    script = tmp_path / "smoke_flow.py"
    script.write_text(FLOW_SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(prefect_server.client_environment())
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "RESULT 12" in done.stdout

    runs = _post(
        f"{prefect_server.url}/flow_runs/filter",
        {"flows": {"name": {"any_": ["harness-smoke"]}}},
    )
    assert isinstance(runs, list) and len(runs) == 1
    assert runs[0]["state"]["type"] == "COMPLETED"
    tasks = _post(
        f"{prefect_server.url}/task_runs/filter",
        {"flow_runs": {"id": {"any_": [runs[0]["id"]]}}},
    )
    assert isinstance(tasks, list) and len(tasks) == 4
    assert {t["state"]["type"] for t in tasks} == {"COMPLETED"}
