"""The Scrapy project's root holds its entry points only; features live in folders."""

from __future__ import annotations

import re

from tests.crawlers.support import REPO_ROOT

CRAWLERS = REPO_ROOT / "crawlers"


def test_the_root_of_crawlers_holds_at_most_ten_modules() -> None:
    modules = sorted(path.name for path in CRAWLERS.glob("*.py"))
    assert len(modules) <= 10, modules


def test_each_feature_folder_is_a_package() -> None:
    for folder in ("frontier", "recrawl", "limits", "runtime", "cli", "pipelines"):
        assert (CRAWLERS / folder / "__init__.py").is_file(), folder


def test_item_types_are_looked_up_through_the_explicit_registry() -> None:
    from crawlers.items import ITEM_CLASSES, registered_types, schema_by_type, schema_for

    names = {schema_for(cls).item_type for cls in ITEM_CLASSES}
    assert names <= set(registered_types())
    assert all(schema_by_type(name).cls in ITEM_CLASSES for name in names)
    # Nobody imports the items module for the side effect of its declarations.
    side_effect = re.compile(r"^\s*(import crawlers\.items|from crawlers import items)\b", re.M)
    found = [
        str(path.relative_to(REPO_ROOT))
        for folder in ("crawlers", "core", "orchestration", "fingerprints", "bench", "tests")
        for path in (REPO_ROOT / folder).rglob("*.py")
        if side_effect.search(path.read_text())
    ]
    assert found == []
