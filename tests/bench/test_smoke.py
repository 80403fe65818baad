"""Every benchmark runs: ``python -m bench.<name>`` at its smoke size (``bench/smoke.py``)
exits 0 and prints its table, so a benchmark broken by a change fails here, not in the
hands of the next person who runs it (issue 45: two did, unnoticed).

``SMOKE`` holds one case per benchmark: its arguments and the lines its table must print.
``test_every_benchmark_has_a_smoke_case`` (a unit test) finds every module of ``bench/``
that is a command (``bench.results.commands``: a module-level ``main`` run under
``__main__``) and fails naming any without a case, so a new benchmark cannot land
without one: add it to ``SMOKE`` (or, for a script another benchmark runs, to ``RUN_BY``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.results import commands

REPO_ROOT = Path(__file__).resolve().parents[2]
REAL_PAGES = REPO_ROOT.parent / "shared" / "real-pages"


def no_real_pages() -> str | None:
    if REAL_PAGES.is_dir():
        return None
    return f"saved real pages not found at {REAL_PAGES} (they are not part of the repository)"


@dataclass(frozen=True)
class Smoke:
    """A benchmark's smoke run: its arguments, what its table prints (each a substring of
    one line of its output, in order) and, when it cannot run here, why."""

    table: tuple[str, ...]
    argv: tuple[str, ...] = ("--smoke",)
    skip: Callable[[], str | None] = lambda: None
    timeout: float = 300.0


SMOKE: dict[str, Smoke] = {
    # bench.access has no --smoke yet (issue 45's work on it is another's): small sizes.
    "access": Smoke(
        # The sessions row at level 0 only; no open-site rounds (their ratios need a full run).
        argv=(
            "--products",
            "12",
            "--levels",
            "0",
            "--rows",
            "sessions",
            "--open-rounds",
            "0",
            "--cap",
            "120",
        ),
        table=("configuration", "identity + sessions + escalation", "CPU seconds by process"),
    ),
    "blocks": Smoke(
        argv=("--smoke", "--pages", str(REAL_PAGES)),
        table=("classify ms", "median ratio classify/parse over"),
        skip=no_real_pages,
    ),
    "embedding": Smoke(
        table=(
            "llm-process",
            "USE multilingual v3 (default)",
            "all-MiniLM-L6-v2",
            "OpenAI-compatible (loopback stand-in)",
            "indexing only",
        )
    ),
    "frontier": Smoke(
        table=("configuration", "bare Scrapy (memory scheduler)", "full path, 2 workers", "goal:"),
        timeout=420.0,
    ),
    "frontier_memory": Smoke(
        table=(
            "bytes per URL in Redis",
            "previous format",
            "this frontier",
            "partitions",
            "goal: <= 200 bytes per queued URL",
            "goal: every master within 10%",
        )
    ),
    "gate": Smoke(
        argv=("--site", "idealista"),
        table=(
            "## idealista",
            "| case | kind | expected | verdict",
            "false passes 0, false stops 0",
        ),
    ),
    "multilingual": Smoke(table=("recall@5", "en ", "es ")),
    "onboarding": Smoke(
        table=(
            "onboarding, measured",
            "quotebook",
            "mean unedited field accuracy",
            "saved real pages",
        ),
        timeout=420.0,
    ),
    "outcomes": Smoke(
        table=(
            "scenario",
            "plain",
            "site down",
            "store refusing, no spill",
            "4 scenarios, 0 mismatches, 0 hung",
        ),
        timeout=420.0,
    ),
    "pipelines": Smoke(table=("median bulk", "ratio bulk / per-item sequential")),
    "reclaim": Smoke(table=("operation", "reclaim() bounded", "drain poll bounded / old")),
    "recrawl": Smoke(table=("goal:",), timeout=420.0),
    "rendering": Smoke(
        table=("median rendered pages/s", "median CPU seconds per rendered page", "memory over"),
        timeout=420.0,
    ),
    "results": Smoke(table=("bench.reclaim", "wrote")),
    "scaling": Smoke(table=("workers  pages/s", "run time")),
    "search": Smoke(table=("mode", "hybrid", "bm25", "knn", "recall@5", "goal: hybrid p50")),
    "soak": Smoke(table=("stored docs vs expected", "faults injected"), timeout=420.0),
}
# Commands that are not benchmarks of their own: the benchmark whose run covers them.
RUN_BY = {"crawlee_demo": "frontier"}


def test_every_benchmark_has_a_smoke_case() -> None:
    found = commands()
    missing = sorted(found - SMOKE.keys() - RUN_BY.keys())
    assert not missing, (
        f"bench.{', bench.'.join(missing)}: no smoke case; give it --smoke (bench/smoke.py) "
        "and add it to SMOKE in tests/bench/test_smoke.py"
    )
    stale = sorted((SMOKE.keys() | RUN_BY.keys()) - found)
    assert not stale, f"smoke cases for no benchmark: {stale}"
    assert set(RUN_BY.values()) <= SMOKE.keys()


@pytest.mark.parametrize("name", sorted(SMOKE))
def test_the_benchmark_runs_at_its_smoke_size(name: str, tmp_path: Path) -> None:
    case = SMOKE[name]
    reason = case.skip()
    if reason:
        pytest.skip(reason)
    env = {**os.environ, "PLATFORM_RUN_DIR": str(tmp_path / "run")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{name}", *case.argv],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=case.timeout,
    )
    output = f"stdout:\n{done.stdout[-6000:]}\nstderr:\n{done.stderr[-4000:]}"
    assert done.returncode == 0, output
    lines = iter(done.stdout.splitlines())
    for expected in case.table:
        assert any(expected in line for line in lines), f"no line with {expected!r}\n{output}"
