"""The names the docs give what a site's runs create are the names the code creates.

Prefect artifact keys take lowercase letters, digits and dashes only, so they spell a site
with dashes (``orchestration.scrape_tasks.artifact_prefix``): the docs write them with
``<site-with-dashes>``. Deployments, indices, compose services and saved searches keep the
site as it is: ``<site>``. Checked with a site whose name has an underscore.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from prefect.types.names import LOWERCASE_LETTERS_NUMBERS_AND_DASHES_ONLY_REGEX

from core.config import REPO_ROOT
from core.store.changes import changes_alias
from core.store.layout import IndexLayout
from indexing.index import chunks_index
from orchestration import kibana_objects, repairs, wiring
from orchestration.register_flows import specs
from orchestration.scrape_tasks import artifact_prefix

SITE = "booking_com"
DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
ARTIFACT_KEY = re.compile(LOWERCASE_LETTERS_NUMBERS_AND_DASHES_ONLY_REGEX)
# What ends an artifact key of a site's run (the flows', progress', hooks' and gate's).
ARTIFACT_ENDING = re.compile(r"-(report|stats|failure|producer|live|progress|proposed-baseline)$")
# Names that keep the site as it is.
SITE_NAME = re.compile(r"(scrape|items|chunks|changes|worker|platform-items)-<site>")


def code_spans(path: Path) -> set[str]:
    return set(re.findall(r"`([^`\n]+)`", path.read_text()))


@pytest.fixture(scope="module")
def documented() -> set[str]:
    """Every inline code span of the README and docs/ that names a site's something."""
    spans = set().union(*(code_spans(path) for path in DOCS))
    return {span for span in spans if "<site" in span}


@pytest.fixture(scope="module")
def site_names() -> set[str]:
    """What the code names for SITE, besides artifact keys."""
    workers = re.findall(r"^  (worker-\S+):$", wiring.worker_services([SITE]), re.MULTILINE)
    saved = kibana_objects.saved_search(SITE, kibana_objects.item_types()[SITE])
    return {
        *(spec.name for spec in specs() if spec.scrape and spec.parameters["site"] == SITE),
        IndexLayout.read_alias(SITE),
        chunks_index(SITE),
        changes_alias(SITE),
        *workers,
        saved["id"],
    }


def artifact_suffixes() -> set[str]:
    """The endings the code puts after ``artifact_prefix(site)``, read from its sources."""
    flows = (REPO_ROOT / "orchestration" / "scrape_tasks.py").read_text()
    progress = (REPO_ROOT / "orchestration" / "progress.py").read_text()
    hooks = (REPO_ROOT / "orchestration" / "hooks.py").read_text()
    direct = set(re.findall(r"\{artifact_prefix\(site\)\}-([a-z-]+)", flows))
    kinds = set(re.findall(r'key=f"\{self\.key\}-([a-z-]+)"', progress))
    failure = set(re.findall(r"\.replace\('_', '-'\)\}-(failure)\"", hooks))
    assert {"report", "stats"} <= direct and kinds and failure == {"failure"}
    return direct | {f"{base}-{kind}" for base in direct for kind in kinds} | failure


def test_artifact_keys_are_documented_with_dashes(documented: set[str]) -> None:
    raw = {span for span in documented if "<site>" in span and ARTIFACT_ENDING.search(span)}
    raw |= {span for span in documented if span.startswith("repair-suggestions-<site>")}
    assert raw == set(), "an artifact key has no '_': write <site-with-dashes>"
    keys = {span for span in documented if "<site-with-dashes>" in span} - {"<site-with-dashes>"}
    assert len(keys) >= 8
    dashed = artifact_prefix(SITE).removeprefix("scrape-")
    assert dashed == "booking-com"
    suffixes = artifact_suffixes()
    for template in keys:
        key = template.replace("<site-with-dashes>", dashed)
        assert ARTIFACT_KEY.fullmatch(key), template
        if key.startswith("scrape-"):
            suffix = key.removeprefix(f"{artifact_prefix(SITE)}-")
            assert suffix in suffixes, f"{template}: no such artifact in the code"
        elif key.startswith("repair-suggestions-"):
            assert key == repairs.artifact_key(SITE)
        else:
            assert key == f"{dashed}-proposed-baseline", template


def test_names_that_keep_the_site_are_the_codes(documented: set[str], site_names: set[str]) -> None:
    templates = {span for span in documented if SITE_NAME.fullmatch(span)}
    assert {"scrape-<site>", "items-<site>", "worker-<site>"} <= templates
    for template in templates:
        assert template.replace("<site>", SITE) in site_names, template


def test_the_docs_example_of_the_rule_is_what_the_code_names(site_names: set[str]) -> None:
    examples = {
        span
        for span in code_spans(REPO_ROOT / "docs" / "orchestration.md")
        if "booking" in span and " " not in span and "/" not in span
    }
    code = site_names | {f"{artifact_prefix(SITE)}-report"}
    assert examples - {"booking-com", "booking_com"} == code
