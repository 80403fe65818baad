"""Small flows wearing the platform's alert hooks, run by test_hooks.py in a subprocess
against the test Prefect server: ``python -m tests.orchestration.hook_flows <case>``."""

from __future__ import annotations

import sys

from prefect import flow, get_run_logger, task
from prefect.states import Failed

from orchestration.hooks import alert_failed_run, alert_failed_step
from orchestration.steps import StepError


@task(name="probe", on_failure=[alert_failed_step])
def probe(fail: bool) -> None:
    get_run_logger().warning("probing the frontier")
    if fail:
        raise StepError("frontier unreachable")


@flow(name="hooked", on_failure=[alert_failed_run], on_crashed=[alert_failed_run])
def hooked(site: str, case: str) -> object:
    probe(fail=case == "step")
    if case == "flow":
        get_run_logger().warning("about to fail outside any step")
        raise RuntimeError("the flow itself broke")
    if case == "closed":
        return Failed(name="FailedClosed", message="structure gate: changed")
    return "ok"


if __name__ == "__main__":
    case = sys.argv[1]
    state = hooked(site="demo", case=case, return_state=True)
    print(state.state_details.flow_run_id)
    print(state.type.value)
