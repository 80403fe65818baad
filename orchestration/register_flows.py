"""Deployments and schedules: the single source of truth.

    python -m orchestration.register_flows [--local-workers N] [--pool scraping]

Creates (or updates) the process work pool with concurrency limit 1, so scheduled
scrapes queue instead of fighting over the browser fleet and proxy budget, and applies
every deployment to it. Each scrape deployment also has deployment concurrency 1 with
the ENQUEUE collision strategy: a late or manual run waits for the running one instead
of running beside it (and late runs do not pile up into parallel runs).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import WorkPoolCreate, WorkPoolUpdate
from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy
from prefect.deployments.runner import RunnerDeployment
from prefect.exceptions import ObjectNotFound

from core.config import REPO_ROOT
from crawlers.profiles import PROFILES_DIR
from orchestration.flows import check_site_versions, daily_health_check, scrape_site

WORK_POOL = "scraping"
WORK_POOL_CONCURRENCY = 1
TIMEZONE = "UTC"

# scrape-<site>: cron (None = manual only). From the seed's deployment table.
SCRAPE_SCHEDULES: dict[str, str | None] = {
    "idealista": "0 3 * * *",  # daily 03:00
    "g2": "0 4 * * 1",  # Monday 04:00
    "hermes": "0 4 * * 2",  # Tuesday 04:00
    "trustpilot": "0 4 * * 3",  # Wednesday 04:00
    "booking_com": None,  # manual only
    "facebook_marketplace": None,  # manual only
    "demo": None,  # the platform's own demo shop, manual
}
MAINTENANCE_SCHEDULES: dict[str, str] = {
    "check-site-versions": "30 2 * * *",  # daily 02:30, before the earliest scrape
    "daily-health-check": "0 9 * * *",  # daily 09:00
}
DESCRIPTIONS = {
    "idealista": "Idealista property scrape",
    "g2": "G2 reviews",
    "hermes": "Hermès products",
    "trustpilot": "Trustpilot reviews",
    "booking_com": "Booking.com hotels",
    "facebook_marketplace": "Facebook Marketplace",
    "demo": "The demo shop (demo_site)",
    "check-site-versions": "Structure fingerprint check of every site's fixtures",
    "daily-health-check": "Site metrics and search API health",
}


@dataclass(frozen=True)
class DeploymentSpec:
    name: str
    cron: str | None
    parameters: dict[str, Any]


def scrape_sites() -> dict[str, str | None]:
    """Every site with a schedule here, plus every profile (a new site's deployment exists,
    manual only, as soon as its profile does; scheduling it is one line above)."""
    sites = dict(SCRAPE_SCHEDULES)
    for profile in sorted(PROFILES_DIR.glob("*.toml")):
        sites.setdefault(profile.stem, None)
    return sites


def specs(local_workers: int = 0) -> list[DeploymentSpec]:
    scrapes = [
        DeploymentSpec(f"scrape-{site}", cron, {"site": site, "local_workers": local_workers})
        for site, cron in scrape_sites().items()
    ]
    maintenance = [DeploymentSpec(name, cron, {}) for name, cron in MAINTENANCE_SCHEDULES.items()]
    return scrapes + maintenance


def build_deployments(local_workers: int = 0) -> list[RunnerDeployment]:
    deployments = []
    one_at_a_time = ConcurrencyLimitConfig(
        limit=1, collision_strategy=ConcurrencyLimitStrategy.ENQUEUE
    )
    for spec in specs(local_workers):
        if spec.name.startswith("scrape-"):
            flow, concurrency = scrape_site, one_at_a_time
        elif spec.name == "check-site-versions":
            flow, concurrency = check_site_versions, None
        else:
            flow, concurrency = daily_health_check, None
        key = spec.name.removeprefix("scrape-")
        default = f"Scrape {key}" if spec.name.startswith("scrape-") else spec.name
        deployments.append(
            flow.to_deployment(
                name=spec.name,
                cron=spec.cron,
                parameters=spec.parameters,
                concurrency_limit=concurrency,
                description=DESCRIPTIONS.get(key, DESCRIPTIONS.get(spec.name, default)),
                tags=["scrape" if spec.name.startswith("scrape-") else "maintenance"],
                work_pool_name=WORK_POOL,
                # The process worker runs flows from here (else a fresh temp dir, where
                # the entrypoint orchestration/flows.py does not exist).
                job_variables={"working_dir": str(REPO_ROOT)},
            )
        )
    for deployment in deployments:
        for schedule in deployment.schedules or []:
            schedule.schedule.timezone = TIMEZONE  # type: ignore[union-attr]
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


def register(local_workers: int = 0) -> list[str]:
    """Create the pool and apply every deployment; returns the deployment names."""
    asyncio.run(ensure_work_pool())
    names = []
    for deployment in build_deployments(local_workers):
        deployment.apply(work_pool_name=WORK_POOL)
        names.append(f"{deployment.flow_name}/{deployment.name}")
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
    args = parser.parse_args(argv)
    for name in register(args.local_workers):
        print(f"registered {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
