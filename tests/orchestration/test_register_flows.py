"""Deployments register on a real Prefect server with exactly the seed's schedules."""

from __future__ import annotations

from pathlib import Path

from crawlers.profiles import load_profiles
from harness.prefect_server import PrefectServer
from tests.orchestration.prefect_api import api, delete_deployments, register_deployments

REPO_ROOT = Path(__file__).resolve().parents[2]

# The platform's own flows, and one scrape-<site> per profile with the profile's schedule
# and description (derived: a new profile needs no edit here).
EXPECTED = {
    **{f"scrape-{p.site}": p.schedule for p in load_profiles()},
    "check-site-versions": "30 2 * * *",
    "daily-health-check": "0 9 * * *",
}
DESCRIPTIONS = {
    **{f"scrape-{p.site}": p.deployment_description for p in load_profiles()},
    "check-site-versions": "Structure fingerprint check of every site's fixtures",
    "daily-health-check": "Site metrics and search API health",
}


def test_the_seed_sites_keep_their_schedules_and_descriptions() -> None:
    # The seed's deployments, now read from their profiles: the derivation keeps them.
    assert EXPECTED["scrape-idealista"] == "0 3 * * *"
    assert EXPECTED["scrape-g2"] == "0 4 * * 1"
    assert EXPECTED["scrape-demo"] is None
    assert DESCRIPTIONS["scrape-hermes"] == "Hermès products"
    assert DESCRIPTIONS["scrape-demo"] == "The demo shop (demo_site)"


def test_deployments_pool_and_schedules(prefect_server: PrefectServer) -> None:
    delete_deployments(prefect_server)  # other modules' deployments (probes, other profiles)
    for _ in range(2):  # idempotent: registering twice changes nothing
        register_deployments(prefect_server)

    pool = api(prefect_server, "/work_pools/scraping")
    assert isinstance(pool, dict)
    assert pool["type"] == "process" and pool["concurrency_limit"] == 1

    deployments = api(prefect_server, "/deployments/filter", {})
    assert isinstance(deployments, list)
    by_name = {d["name"]: d for d in deployments}
    assert set(by_name) == set(EXPECTED)
    for name, cron in EXPECTED.items():
        deployment = by_name[name]
        assert deployment["work_pool_name"] == "scraping"
        crons = [s["schedule"].get("cron") for s in deployment["schedules"]]
        assert crons == ([cron] if cron else []), name
        assert all(s["schedule"].get("timezone") == "UTC" for s in deployment["schedules"])
        assert deployment["description"] == DESCRIPTIONS[name]
        if name.startswith("scrape-"):
            assert deployment["parameters"]["site"] == name.removeprefix("scrape-")
            assert deployment["parameters"]["local_workers"] == 2
            assert deployment["global_concurrency_limit"]["limit"] == 1
            assert deployment["concurrency_options"]["collision_strategy"] == "ENQUEUE"
        # Local mode (the helper registers with --local-workers 2, as the local stack
        # does): no production site is scraped on a schedule by itself.
        assert deployment["paused"] is bool(name.startswith("scrape-") and cron), name


def test_production_registration_keeps_schedules_active(prefect_server: PrefectServer) -> None:
    delete_deployments(prefect_server)
    register_deployments(prefect_server, local_workers=0)
    deployments = api(prefect_server, "/deployments/filter", {})
    assert isinstance(deployments, list)
    scheduled = {d["name"]: d["paused"] for d in deployments if d["schedules"]}
    assert scheduled and not any(scheduled.values()), scheduled
    # Back to local mode: a machine that once registered production schedules gets them
    # paused again, and a manual run of a paused deployment still starts.
    register_deployments(prefect_server)
    deployments = api(prefect_server, "/deployments/filter", {})
    paused = {d["name"] for d in deployments if d["paused"]}
    assert paused == {name for name in scheduled if name.startswith("scrape-")}
    idealista = next(d for d in deployments if d["name"] == "scrape-idealista")
    run = api(prefect_server, f"/deployments/{idealista['id']}/create_flow_run", {})
    assert isinstance(run, dict) and run["state"]["type"] == "SCHEDULED"
    api(prefect_server, f"/flow_runs/{run['id']}", method="DELETE")
    delete_deployments(prefect_server)
