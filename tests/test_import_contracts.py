"""The import contracts in ``.importlinter`` bite: each kind of forbidden import breaks them.

``make test`` runs ``lint-imports`` on the real code. These tests run the same config on a
tiny synthetic tree with the project's package names (so the outcome does not depend on
today's code): allowed imports pass, and an upward import, an import between siblings of
one layer, the demo shop or the jobs board importing the platform, a stage of the structure
gate importing a later one and a cycle inside a package each fail.
"""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
from pathlib import Path

import pytest

# One lint-imports subprocess per case over a synthetic tree: heavy for the fast tier
# (`make lint` checks the real tree's contracts on every run).
pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parent.parent
CONFIG = REPO_ROOT / ".importlinter"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

# Imports the architecture allows; every case below adds one forbidden import to these.
ALLOWED = {
    "orchestration/flows.py": "import fingerprints.gate\nimport search.api\nimport harness\n",
    "bench/pipelines.py": (
        "import crawlers.spiders\nimport harness.stack\nimport standins.demo_site.shop\n"
    ),
    "harness/stack.py": (
        "import standins.demo_site.shop\nimport crawlers.profiles\nimport core.config\n"
    ),
    "fingerprints/__main__.py": "import fingerprints.cli\n",
    "fingerprints/cli.py": "import fingerprints.evaluation.cases\nimport fingerprints.gate\n",
    "fingerprints/evaluation/cases.py": "import fingerprints.gate\n",
    "fingerprints/gate.py": (
        "import fingerprints.verdicts.decisions\nimport fingerprints.sampling.fetch\n"
        "import crawlers.profiles\n"
    ),
    "fingerprints/repair/suggestions.py": "import fingerprints.repair.rules\n",
    "fingerprints/repair/rules.py": "",
    "fingerprints/verdicts/decisions.py": "import fingerprints.extraction.judgement\n",
    "fingerprints/extraction/judgement.py": (
        "import fingerprints.extraction.callbacks\nimport fingerprints.baselines.store\n"
    ),
    "fingerprints/extraction/callbacks.py": "import fingerprints.sampling.fetch\n",
    "fingerprints/baselines/store.py": "import fingerprints.structure.fingerprint\n",
    "fingerprints/structure/fingerprint.py": "",
    "fingerprints/sampling/fetch.py": "import crawlers.spiders\n",
    "search/api.py": "import indexing.embedders\nimport core.store\n",
    "indexing/embedders.py": "import core.config\n",
    "crawlers/spiders.py": "import crawlers.profiles\nimport crawlers.fetch.retry\n",
    "crawlers/profiles.py": "",
    "crawlers/fetch/retry.py": "import crawlers.fetch.classify\nimport core.fetch.blocks\n",
    "crawlers/fetch/classify.py": "import core.fetch.blocks\n",
    "core/config.py": "",
    "core/store.py": "import core.config\n",
    "core/fetch/blocks.py": "",
    "standins/loopback.py": "",
    "standins/demo_site/shop.py": "import standins.demo_site.catalog\nimport standins.loopback\n",
    "standins/demo_site/catalog.py": "",
    "standins/job_board_site/server.py": "import standins.job_board_site.board\n",
    "standins/job_board_site/board.py": "",
    "standins/plain_sites/site.py": "",
}


def root_packages() -> list[str]:
    parser = configparser.ConfigParser()
    parser.read(CONFIG)
    return parser["importlinter"]["root_packages"].split()


def lint(tmp_path: Path, extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    for package in root_packages():
        (tmp_path / package).mkdir(exist_ok=True)
        (tmp_path / package / "__init__.py").touch()
    for relative, source in {**ALLOWED, **extra}.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / "__init__.py").touch()
        path.write_text(source)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(CONFIG), "--no-cache"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_top_level_package_has_a_place_in_the_contracts() -> None:
    packages = {
        path.parent.name
        for path in REPO_ROOT.glob("*/__init__.py")
        if path.parent.name not in {"tests"}
    }
    assert packages == set(root_packages())


def test_the_intended_imports_pass(tmp_path: Path) -> None:
    result = lint(tmp_path, {})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout


@pytest.mark.parametrize(
    ("extra", "contract", "named"),
    [
        pytest.param(
            {"core/store.py": "import orchestration.flows\n"},
            "Layers",
            "core.store -> orchestration.flows",
            id="core-imports-orchestration",
        ),
        pytest.param(
            # A module the sample's spiders do not import: else the gate's stages break too
            # (the sampler would reach the gate through crawlers).
            {"crawlers/items.py": "import fingerprints.gate\n"},
            "Layers",
            "crawlers.items -> fingerprints.gate",
            id="crawlers-import-fingerprints",
        ),
        pytest.param(
            {"indexing/embedders.py": "import crawlers.spiders\n"},
            "Layers",
            "indexing.embedders -> crawlers.spiders",
            id="siblings-llm-and-crawlers",
        ),
        pytest.param(
            {"core/config.py": "import harness.stack\n"},
            "Layers",
            "core.config -> harness.stack",
            id="platform-imports-the-harness",
        ),
        pytest.param(
            {"search/api.py": "import standins.demo_site.shop\n"},
            "Layers",
            "search.api -> standins.demo_site.shop",
            id="platform-imports-the-demo-shop",
        ),
        pytest.param(
            {"standins/demo_site/shop.py": "import core.config\n"},
            "The demo shop stands alone",
            "standins.demo_site.shop -> core.config",
            id="demo-shop-imports-core",
        ),
        pytest.param(
            {"standins/job_board_site/board.py": "import core.config\n"},
            "The jobs board stands alone",
            "standins.job_board_site.board -> core.config",
            id="jobs-board-imports-core",
        ),
        pytest.param(
            # The demo shop off the base: else its own contracts break through it too.
            {
                "standins/loopback.py": "import core.config\n",
                "standins/demo_site/shop.py": "import standins.demo_site.catalog\n",
            },
            "The loopback base stands alone",
            "standins.loopback -> core.config",
            id="loopback-base-imports-core",
        ),
        pytest.param(
            {"standins/demo_site/catalog.py": "import standins.job_board_site.board\n"},
            "Layers",
            "standins.demo_site.catalog -> standins.job_board_site.board",
            id="siblings-jobs-board-and-demo-shop",
        ),
        pytest.param(
            {"crawlers/profiles.py": "import standins.job_board_site.board\n"},
            "Layers",
            "crawlers.profiles -> standins.job_board_site.board",
            id="platform-imports-the-jobs-board",
        ),
        pytest.param(
            {"crawlers/profiles.py": "import crawlers.spiders\n"},
            "No import cycles",
            "No cycles are allowed in crawlers",
            id="cycle-in-a-package",
        ),
        pytest.param(
            {"crawlers/fetch/classify.py": "import crawlers.fetch.retry\n"},
            "No import cycles",
            "No cycles are allowed in crawlers.fetch",
            id="cycle-in-a-subpackage",
        ),
        pytest.param(
            {
                "fingerprints/baselines/store.py": (
                    "import fingerprints.structure.fingerprint\nimport fingerprints.repair.rules\n"
                )
            },
            "Fingerprints stages",
            "fingerprints.baselines.store -> fingerprints.repair.rules",
            id="gate-stage-imports-a-later-stage",
        ),
        pytest.param(
            {"fingerprints/repair/rules.py": "import fingerprints.gate\n"},
            "Fingerprints stages",
            "fingerprints.repair.rules -> fingerprints.gate",
            id="siblings-repair-and-gate",
        ),
        pytest.param(
            {
                "fingerprints/extraction/callbacks.py": (
                    "import fingerprints.sampling.fetch\n"
                    "def later():\n    import fingerprints.extraction.judgement\n"
                )
            },
            "No import cycles",
            "No cycles are allowed in fingerprints.extraction",
            id="cycle-through-a-function-level-import",
        ),
    ],
)
def test_a_forbidden_import_breaks_its_contract(
    tmp_path: Path, extra: dict[str, str], contract: str, named: str
) -> None:
    result = lint(tmp_path, extra)
    assert result.returncode != 0, result.stdout
    broken = [line for line in result.stdout.splitlines() if line.endswith("BROKEN")]
    assert len(broken) == 1 and broken[0].startswith(contract), result.stdout
    assert named in result.stdout, result.stdout
