"""A flow that sends the platform's structure alert for a gate result read from stdin, as
``scrape-site`` does when the gate fails closed; run by test_repairs.py in a subprocess
against the test Prefect server: ``python -m tests.orchestration.repair_flows``."""

from __future__ import annotations

import json
import sys
from typing import Any

from prefect import flow
from prefect.runtime import flow_run

from orchestration.scrape_tasks import alert_structure_change


@flow(name="structure-alert")
def structure_alert(site: str, result: dict[str, Any]) -> str:
    alert_structure_change(site, result)
    return str(flow_run.get_id())


if __name__ == "__main__":
    gate = json.loads(sys.stdin.read())
    print(structure_alert(gate["site"], gate))
