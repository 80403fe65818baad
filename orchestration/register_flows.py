"""Deployments: every site profile's ``scrape-<site>`` and the maintenance flows.

    python -m orchestration.register_flows [--local-workers N]

Reads each profile's schedule (cron, UTC) and description (``crawlers/profiles/<site>.toml``)
and ``MAINTENANCE`` here; creates the process work pool (concurrency 1) and applies every
deployment to it (deployment concurrency 1, ``ENQUEUE``), with the automation that alerts
failed runs whose own alert never came. In local mode (``--local-workers N``) scheduled
scrape deployments are registered paused unless ``--schedules active``.
Why and how: docs/orchestration.md "Deployments (``orchestration/register_flows.py``)".
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from prefect import Flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import WorkPoolCreate, WorkPoolUpdate
from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy
from prefect.deployments.runner import RunnerDeployment
from prefect.exceptions import ObjectNotFound

from core.config import REPO_ROOT, OperatorError, get_settings
from crawlers.profiles import ProfileError, load_profiles
from orchestration import automations
from orchestration.flows import check_site_versions, daily_health_check, scrape_site

WORK_POOL = "scraping"
WORK_POOL_CONCURRENCY = 1
TIMEZONE = "UTC"


@dataclass(frozen=True)
class DeploymentSpec:
    name: str
    flow: Flow[..., Any]
    cron: str | None  # UTC; None = manual runs only
    description: str
    parameters: dict[str, Any] = field(default_factory=dict)
    scrape: bool = False  # a scrape-<site> deployment (one run at a time, queued)


# The maintenance flows' deployments. The scrape-<site> ones come from the site profiles
# (crawlers/profiles/<site>.toml: schedule, description), one per profile.
MAINTENANCE = (
    DeploymentSpec(
        "check-site-versions",
        check_site_versions,
        "30 2 * * *",  # daily 02:30, before the earliest scrape
        "Structure fingerprint check of every site's fixtures",
    ),
    DeploymentSpec(
        "daily-health-check",
        daily_health_check,
        "0 9 * * *",  # daily 09:00
        "Site metrics and search API health",
    ),
)


def specs(local_workers: int = 0) -> list[DeploymentSpec]:
    """Every profile's ``scrape-<site>`` (manual unless the profile has a ``schedule``),
    then the maintenance deployments."""
    scrapes = [
        DeploymentSpec(
            f"scrape-{profile.site}",
            scrape_site,
            profile.schedule,
            profile.deployment_description,
            {"site": profile.site, "local_workers": local_workers},
            scrape=True,
        )
        for profile in load_profiles()
    ]
    return scrapes + list(MAINTENANCE)


def build_deployments(
    local_workers: int = 0, *, pause_scrapes: bool | None = None
) -> list[RunnerDeployment]:
    """``pause_scrapes`` (default: local mode, ``local_workers`` > 0): scheduled scrape
    deployments are registered paused (manual runs still start)."""
    if pause_scrapes is None:
        pause_scrapes = local_workers > 0
    deployments = []
    one_at_a_time = ConcurrencyLimitConfig(
        limit=1, collision_strategy=ConcurrencyLimitStrategy.ENQUEUE
    )
    for spec in specs(local_workers):
        deployment = spec.flow.to_deployment(
            name=spec.name,
            cron=spec.cron,
            parameters=spec.parameters,
            concurrency_limit=one_at_a_time if spec.scrape else None,
            paused=True if pause_scrapes and spec.scrape and spec.cron else None,
            description=spec.description,
            tags=["scrape" if spec.scrape else "maintenance"],
            work_pool_name=WORK_POOL,
            # The process worker runs flows from here (else a fresh temp dir, where
            # the entrypoint orchestration/flows.py does not exist).
            job_variables={"working_dir": str(REPO_ROOT)},
        )
        # Called outside an event loop: Prefect's sync/async function returns the deployment.
        assert isinstance(deployment, RunnerDeployment)
        deployments.append(deployment)
    for deployment in deployments:
        for schedule in deployment.schedules or []:
            schedule.schedule.timezone = TIMEZONE  # type: ignore[union-attr]  # cron: all have one
    return deployments


async def ensure_work_pool(name: str = WORK_POOL, limit: int = WORK_POOL_CONCURRENCY) -> None:
    async with get_client() as client:
        try:
            await client.read_work_pool(name)
        except ObjectNotFound:
            await client.create_work_pool(
                WorkPoolCreate(name=name, type="process", concurrency_limit=limit)
            )
        else:
            await client.update_work_pool(name, WorkPoolUpdate(concurrency_limit=limit))


def register(
    local_workers: int = 0,
    *,
    pause_scrapes: bool | None = None,
    alert_grace: float = automations.GRACE_SECONDS,
) -> list[str]:
    """Create the pool, apply every deployment and the automation that alerts their
    failed runs without an alert of their own (``orchestration/automations.py``);
    returns what was registered, one line each (a paused deployment marked so)."""
    asyncio.run(ensure_work_pool())
    names = []
    deployments = build_deployments(local_workers, pause_scrapes=pause_scrapes)
    for deployment in deployments:
        deployment.apply(work_pool_name=WORK_POOL)
        paused = " (schedule paused: local mode)" if deployment.paused else ""
        names.append(f"{deployment.flow_name}/{deployment.name}{paused}")
    flows = sorted({deployment.flow_name for deployment in deployments if deployment.flow_name})
    webhook = get_settings().slack_webhook_url
    names.append(asyncio.run(automations.register(webhook, flows, grace=alert_grace)))
    return names


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--local-workers",
        type=int,
        default=0,
        help="scrape runs launch this many `scrapy crawl` workers themselves (local mode); "
        "0 when always-on workers serve the frontier (compose)",
    )
    parser.add_argument(
        "--alert-grace",
        type=float,
        default=automations.GRACE_SECONDS,
        metavar="SECONDS",
        help="how long the automation waits for a failed run's own alert before it sends "
        f"one (default {automations.GRACE_SECONDS}; at least {automations.MIN_GRACE_SECONDS})",
    )
    parser.add_argument(
        "--schedules",
        choices=("auto", "active", "paused"),
        default="auto",
        help="scheduled scrape deployments: paused in local mode (auto, the default), or as given",
    )
    args = parser.parse_args(argv)
    if args.alert_grace < automations.MIN_GRACE_SECONDS:
        raise OperatorError(
            f"--alert-grace {args.alert_grace:g}: Prefect waits at least "
            f"{automations.MIN_GRACE_SECONDS} s for an expected event"
        )
    pause = {"auto": None, "active": False, "paused": True}[args.schedules]
    try:
        names = register(args.local_workers, pause_scrapes=pause, alert_grace=args.alert_grace)
    except ProfileError as exc:
        # Nothing registered: one line naming the profile, its key and the expected value.
        raise OperatorError(str(exc)) from None
    for name in names:
        print(name if name.startswith("automation ") else f"registered {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
