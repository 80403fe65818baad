"""A small deployed flow for test_local_stack.py: ``python -m tests.orchestration.stack_flows
<pool>`` creates the process work pool and applies the deployment ``stack-probe/stack-probe``
on the Prefect server of ``PREFECT_API_URL``."""

from __future__ import annotations

import asyncio
import sys

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import WorkPoolCreate
from prefect.exceptions import ObjectNotFound
from prefect.states import Completed, Failed, State

from core.config import REPO_ROOT
from orchestration import run_log

run_log.install()  # as orchestration.flows does


@flow(name="stack-probe")
def stack_probe(
    base_url: str = "", approval_timeout: int | None = None, fail: bool = True, warn: bool = False
) -> State | str:
    """Fails closed the way scrape-site's gate does, echoing the parameters it was given
    (a number stays a number); a two-line message, as a gate's reason can be. Logs a
    progress line and updates an artifact, as the scrape flow's steps do. ``warn``:
    completes with a warning instead, as a drifted scrape does."""
    get_run_logger().info("progress: crawl 10/20 pages")
    create_markdown_artifact("10/20 pages", key="stack-probe-progress")
    if warn:
        return Completed(name="CompletedWithWarnings", message="structure drifted", data="ok")
    if fail:
        return Failed(
            name="FailedClosed",
            message=f"structure gate failed closed: {base_url} "
            f"approval_timeout={approval_timeout!r}\nsee log",
        )
    return "ok"


async def ensure_pool(name: str) -> None:
    async with get_client() as client:
        try:
            await client.read_work_pool(name)
        except ObjectNotFound:
            await client.create_work_pool(WorkPoolCreate(name=name, type="process"))


if __name__ == "__main__":
    pool = sys.argv[1]
    asyncio.run(ensure_pool(pool))
    stack_probe.to_deployment(
        name="stack-probe", work_pool_name=pool, job_variables={"working_dir": str(REPO_ROOT)}
    ).apply(work_pool_name=pool)
