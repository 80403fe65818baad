"""A site nobody here has written a profile for, onboarded end to end unedited: the
scaffold writes its profile, fixtures, baseline and coverage baseline
(``python -m crawlers.scaffold``), the baseline is recomputed from the fixtures as an
operator would after a look (``python -m fingerprints baseline``), then ``scrape-<site>``
runs on the test stack: the gate passes, every item the site holds is stored with its
fields as the site's generator rendered them, and the report judges the field coverage
against the scaffold's baseline.

The site is a corpus site of ``plain_sites`` (the bookshop: relative links, star classes,
an information table, pounds on an ``en-us`` page), served on loopback.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench.onboarding import measure
from harness.es_node import ElasticsearchNode
from harness.plain_site import PlainSite
from harness.prefect_server import PrefectServer
from harness.redis_server import RedisServer
from tests.orchestration.profile_flows import (
    FlowStack,
    ProfileDirs,
    flow_worker,
    fresh_profile_dirs,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
KIND, SITE, SEED, ITEMS = "bookshop", "newbooks", 20260401, 40


@dataclass
class Onboarded:
    flows: FlowStack
    site: PlainSite
    scaffold: subprocess.CompletedProcess[str]
    baseline: subprocess.CompletedProcess[str]


def run(dirs: ProfileDirs, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ) | dirs.env | {"PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        [sys.executable, "-m", *argv], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
        timeout=900, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def onboarded(
    tmp_path_factory: pytest.TempPathFactory,
    prefect_server: PrefectServer,
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
) -> Iterator[Onboarded]:
    dirs = fresh_profile_dirs(tmp_path_factory.mktemp("onboarding"), redis_server, es_node, [SITE])
    with PlainSite(KIND, seed=SEED, items=ITEMS, run_dir=dirs.run_dir) as site:
        scaffold = run(dirs, "crawlers.scaffold", SITE, site.url + "/", "--pages", "40")
        assert scaffold.returncode == 0, scaffold.stdout + scaffold.stderr
        baseline = run(dirs, "fingerprints", "baseline", SITE)
        assert baseline.returncode == 0, baseline.stdout + baseline.stderr
        with flow_worker(dirs, prefect_server, redis_server, es_node) as flows:
            yield Onboarded(flows, site, scaffold, baseline)


def report_figures(report: str) -> dict[str, str]:
    return {
        match[1].strip(): match[2].strip()
        for match in re.finditer(r"^\|\s*([^|]+?)\s*\|\s*([^|]*?)\s*\|\s*$", report, re.M)
    }


@pytest.mark.timeout(1200)  # its fixture scaffolds the site before the flow runs
def test_an_unedited_scaffolded_site_runs_its_flow(onboarded: Onboarded) -> None:
    assert (
        f"wrote sites/{SITE}/coverage.json" in onboarded.scaffold.stdout
        or (onboarded.flows.sites / SITE / "coverage.json").is_file()
    )
    run_ = onboarded.flows.run(f"scrape-{SITE}")
    # Completed: the structure gate, which fails closed, passed on the scaffold's baseline.
    assert run_["state"]["type"] == "COMPLETED", run_["state"]
    truth = onboarded.site.truth()
    items = stored(onboarded.flows, f"items-{SITE}")
    found, accuracy, wrong = measure(items, truth)
    assert found == len(truth.items) == len(items), (found, len(items))
    assert accuracy >= 0.95, wrong
    report = onboarded.flows.artifact(run_["id"], f"scrape-{SITE}-report")
    table = report_figures(report)
    assert table["stored"] == str(ITEMS) and table["invalid (dropped)"] == "0"
    # The coverage was judged against the scaffold's coverage baseline.
    assert re.search(rf"ok: \d+ field\(s\) within tolerance \({ITEMS} items\)", report), report


def stored(stack: FlowStack, index: str) -> list[dict[str, Any]]:
    es = stack.es()
    es.indices.refresh(index=index)
    hits = es.search(index=index, size=1000, query={"match_all": {}})["hits"]["hits"]
    return [hit["_source"] for hit in hits]
