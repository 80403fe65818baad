"""The Scrapy project's root holds its entry points only; features live in folders."""

from __future__ import annotations

from tests.crawlers.support import REPO_ROOT

CRAWLERS = REPO_ROOT / "crawlers"


def test_the_root_of_crawlers_holds_at_most_ten_modules() -> None:
    modules = sorted(path.name for path in CRAWLERS.glob("*.py"))
    assert len(modules) <= 10, modules


def test_each_feature_folder_is_a_package() -> None:
    for folder in ("frontier", "recrawl", "limits", "runtime", "cli", "pipelines"):
        assert (CRAWLERS / folder / "__init__.py").is_file(), folder
