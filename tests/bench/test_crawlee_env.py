"""crawlee's venv gets what its script reaches of the repository, at the project's pins,
from the project's one dependency list (pyproject.toml), not from a list kept beside it."""

from __future__ import annotations

import textwrap
from pathlib import Path

from bench.crawlee_env import (
    CRAWLEE_REQUIREMENT,
    CRAWLEE_SCRIPT,
    crawlee_requirements,
    imported_modules,
    project_pins,
    requirement_name,
)


def test_every_requirement_is_a_project_pin_but_crawlee_itself() -> None:
    requirements = crawlee_requirements()
    assert requirements[0] == CRAWLEE_REQUIREMENT
    pins = project_pins()
    for requirement in requirements[1:]:
        assert pins[requirement_name(requirement)] == requirement
        assert "==" in requirement


def test_what_the_extraction_imports_deep_down_is_installed() -> None:
    names = {requirement_name(requirement) for requirement in crawlee_requirements()}
    # babel: crawlers/spiders/currency.py, three imports away from the script (its
    # absence broke the crawlee row); html-text: only through extruct's requirements.
    assert {"scrapy", "extruct", "price-parser", "babel", "html-text"} <= names
    # What the extraction never reaches stays out: the orchestration, search, the LLM step.
    assert not {"prefect", "fastapi", "uvicorn", "openai", "slack-sdk"} & names


def test_imports_are_followed_through_repository_modules_and_function_bodies(
    tmp_path: Path,
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("import yaml\n")
    (tmp_path / "pkg" / "deep.py").write_text(
        textwrap.dedent(
            """
            import json

            def later():
                import babel.numbers
                from lxml import html
            """
        )
    )
    script = tmp_path / "script.py"
    script.write_text("import os\nfrom pkg.deep import later\nfrom parsel import Selector\n")
    assert imported_modules(script, root=tmp_path) == {"yaml", "babel", "lxml", "parsel"}


def test_the_script_reaches_crawlee_and_the_extraction() -> None:
    modules = imported_modules(CRAWLEE_SCRIPT)
    assert {"crawlee", "parsel", "scrapy", "extruct", "price_parser", "babel"} <= modules
