"""Every site of the onboarding corpus, onboarded end to end unedited: the scaffold writes
its profile, fixtures, baseline and coverage baseline (``python -m crawlers.scaffold``),
the baseline is recomputed from the fixtures as an operator would after a look
(``python -m fingerprints baseline``), then ``scrape-<site>`` runs on the test stack: the
gate passes, every item the site holds is stored with its fields as the site's generator
rendered them (the bar of ``bench.onboarding``: no site below 85%), and the report judges
the field coverage against the scaffold's coverage baseline.

The sites are ``standins.plain_sites.corpus``'s (``tests.corpus_selection``: a few by default,
``ONBOARDING_SITES=all`` for every one, the shipped werkstatt and sayings scaffolded
afresh under another name), served on loopback one at a time at
a small size (30 items: lists of several pages, enough items for coverage to be judged).
One Prefect worker runs them all; each site's deployment is registered once its profile
is written.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.onboarding import SITE_BAR, measure
from harness.es_node import ElasticsearchNode
from harness.plain_site import PlainSite
from harness.prefect_server import PrefectServer
from harness.redis_server import RedisServer
from standins.plain_sites.corpus import CORPUS
from tests.corpus_selection import onboarding_sites
from tests.orchestration.prefect_api import register_deployments
from tests.orchestration.profile_flows import (
    FlowStack,
    ProfileDirs,
    flow_worker,
    fresh_profile_dirs,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
SEED, ITEMS, PAGES = 20260401, 30, 40


def site_name(kind: str) -> str:
    return f"new{kind}"


def run(dirs: ProfileDirs, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ) | dirs.env | {"PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        [sys.executable, "-m", *argv], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
        timeout=900, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory,
    prefect_server: PrefectServer,
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
) -> Iterator[tuple[ProfileDirs, FlowStack]]:
    names = [site_name(kind) for kind in CORPUS]
    dirs = fresh_profile_dirs(tmp_path_factory.mktemp("onboarding"), redis_server, es_node, names)
    with flow_worker(dirs, prefect_server, redis_server, es_node) as flows:
        yield dirs, flows


def report_figures(report: str) -> dict[str, str]:
    return {
        match[1].strip(): match[2].strip()
        for match in re.finditer(r"^\|\s*([^|]+?)\s*\|\s*([^|]*?)\s*\|\s*$", report, re.M)
    }


@pytest.mark.timeout(1200)  # the scaffold's sample, the baseline, then the flow
@pytest.mark.parametrize("kind", onboarding_sites(("gearshop", "vacancies", "quotebook", "homes")))
def test_an_unedited_scaffolded_site_runs_its_flow(
    kind: str, stack: tuple[ProfileDirs, FlowStack], prefect_server: PrefectServer
) -> None:
    dirs, flows = stack
    site = site_name(kind)
    with PlainSite(kind, seed=SEED, items=ITEMS, run_dir=dirs.run_dir, name=f"new-{kind}") as www:
        scaffold = run(dirs, "crawlers.scaffold", site, www.url + "/", "--pages", str(PAGES))
        assert scaffold.returncode == 0, scaffold.stdout + scaffold.stderr
        assert scaffold.stdout.endswith(f"{site}/coverage.json\n"), scaffold.stdout
        assert (dirs.sites / site / "coverage.json").is_file()
        baseline = run(dirs, "fingerprints", "baseline", site)
        assert baseline.returncode == 0, baseline.stdout + baseline.stderr
        register_deployments(prefect_server, dirs.env)
        run_ = flows.run(f"scrape-{site}")
        truth = www.truth()
    # Completed: the structure gate, which fails closed, passed on the scaffold's baseline.
    assert run_["state"]["type"] == "COMPLETED", run_["state"]
    items = stored(flows, f"items-{site}")
    found, accuracy, wrong = measure(items, truth)
    assert found == len(truth.items) == len(items), (found, len(truth.items), len(items))
    assert accuracy >= SITE_BAR, wrong
    report = flows.artifact(run_["id"], f"scrape-{site}-report")
    table = report_figures(report)
    assert table["stored"] == str(len(items)) and table["invalid (dropped)"] == "0", table
    # The coverage was judged against the scaffold's coverage baseline.
    assert re.search(rf"ok: \d+ field\(s\) within tolerance \({len(items)} items\)", report), report


def stored(stack: FlowStack, index: str) -> list[dict[str, Any]]:
    es = stack.es()
    es.indices.refresh(index=index)
    hits = es.search(index=index, size=1000, query={"match_all": {}})["hits"]["hits"]
    return [hit["_source"] for hit in hits]
