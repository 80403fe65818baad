"""Sites onboarded with a profile only, end to end: ``python -m crawlers.scaffold <site>
<url>`` against a local site writes the profile, fixtures and baseline; the
``scrape-<site>`` deployment registered from that profile then runs on the local stack
(real Prefect server and worker, Redis, ES, the OpenAI stub): gate, producer, generic
spider workers, store, chunks, report. What is stored is compared with the site's own
generator, field by field.

Profiles and baselines go to a temporary directory (``SITE_PROFILES_DIR``,
``FINGERPRINT_SITES_DIR``), as an operator keeping them outside the repository would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from crawlers.profiles import SiteProfile
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.job_board_site import JobBoardSite
from harness.prefect_server import PrefectServer
from harness.redis_server import RedisServer
from standins.demo_site.catalog import build_catalog
from standins.job_board_site.board import build_board
from tests.orchestration.profile_flows import (
    FlowStack,
    chunked_items,
    flow_worker,
    fresh_profile_dirs,
    stored,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
PRODUCTS = 120
JOBS = 150
# What the board's JobPosting JSON-LD carries, as job_posting fields.
JSONLD_JOB_FIELDS = {
    "posting_id", "title", "company", "company_url", "employment_type", "city", "region",
    "country", "salary_min", "salary_max", "salary_currency", "salary_period", "date_posted",
    "valid_through", "description", "skills",
}  # fmt: skip


@dataclass
class Onboarding(FlowStack):
    shop: DemoSite
    jobs: JobBoardSite
    scaffold_output: dict[str, str]


def scaffold(site: str, url: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "crawlers.scaffold", site, url],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    return done.stdout


@pytest.fixture(scope="module")
def onboarded(
    tmp_path_factory: pytest.TempPathFactory,
    prefect_server: PrefectServer,
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
) -> Iterator[Onboarding]:
    dirs = fresh_profile_dirs(
        tmp_path_factory.mktemp("profile-only"), redis_server, es_node, ("shop", "jobs")
    )
    run_dir = dirs.run_dir
    with (
        DemoSite(run_dir=run_dir, products=PRODUCTS, name="profile-only-shop") as shop,
        JobBoardSite(run_dir=run_dir, jobs=JOBS, name="profile-only-jobs") as jobs,
    ):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        env.update(dirs.env, PLATFORM_RUN_DIR=str(run_dir))
        output = {"shop": scaffold("shop", shop.url, env), "jobs": scaffold("jobs", jobs.url, env)}
        with flow_worker(dirs, prefect_server, redis_server, es_node) as flows:
            yield Onboarding(
                prefect_server, es_node, flows.profiles, flows.sites, shop, jobs, output
            )


def test_the_scaffolded_shop_runs_end_to_end(onboarded: Onboarding) -> None:
    profile = SiteProfile.load("shop", onboarded.profiles)
    assert profile.item_type == "product" and profile.pages
    assert (onboarded.sites / "shop" / "baseline.json").is_file()
    run = onboarded.run("scrape-shop")
    assert run["state"]["type"] == "COMPLETED", (run["state"], run["state"].get("message"))
    items = stored(onboarded, "items-shop")
    catalog = build_catalog(7, PRODUCTS)
    assert len(items) == PRODUCTS
    for product in catalog.products:
        expected = product.to_dict(onboarded.shop.url)
        item = items[expected["url"]]
        assert item["product_id"] == expected["sku"]
        for field in ("name", "brand", "category", "price", "currency", "availability"):
            assert item[field] == expected[field], (field, item, expected)
        assert item["description"] == expected["description"]
        assert item["images"] == [expected["image"]]
        if expected["review_count"]:
            assert (item["rating"], item["review_count"]) == (
                expected["rating"],
                expected["review_count"],
            )
    assert chunked_items(onboarded, "chunks-shop") == PRODUCTS
    report = onboarded.artifact(run["id"], "scrape-shop-report")
    assert "`items-shop`" in report and "`chunks-shop`" in report


def test_the_scaffolded_jobs_board_runs_end_to_end(onboarded: Onboarding) -> None:
    """Every posting of the board stored once; every field the scaffolded profile has a
    rule for equals the generator's, and the fields its JSON-LD carries all have one."""
    profile = SiteProfile.load("jobs", onboarded.profiles)
    assert profile.item_type == "job_posting"
    ruled = {field for page in profile.pages.values() for field in page.fields}
    assert ruled >= JSONLD_JOB_FIELDS, JSONLD_JOB_FIELDS - ruled
    run = onboarded.run("scrape-jobs")
    assert run["state"]["type"] == "COMPLETED", (run["state"], run["state"].get("message"))
    items = stored(onboarded, "items-jobs")
    board = build_board(7, JOBS)
    assert len(items) == JOBS
    for job in board.jobs:
        expected = job.to_dict(onboarded.jobs.url)
        item = items[expected["url"]]
        for field in sorted(ruled):
            assert item.get(field) == expected[field], (field, item.get(field), expected[field])
    assert chunked_items(onboarded, "chunks-jobs") == JOBS
    report = onboarded.artifact(run["id"], "scrape-jobs-report")
    assert "`items-jobs`" in report
