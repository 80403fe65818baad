"""The start-up guard of private Scrapy / scrapy-playwright uses (crawlers/compat.py)."""

from __future__ import annotations

from importlib.metadata import version

import pytest
from scrapy.utils.test import get_crawler

import crawlers.frontier.scheduler
from crawlers.compat import (
    PRIVATE_USES,
    PrivateApiMissing,
    PrivateUse,
    check_private_api,
    missing_private_api,
)


def test_the_installed_versions_have_every_declared_private_use() -> None:
    assert missing_private_api() == []
    check_private_api()


def test_every_declared_use_says_why() -> None:
    for use in PRIVATE_USES:
        assert use.why.strip() and use.distribution and use.target and use.attribute


def test_a_missing_attribute_fails_with_one_line_naming_the_distribution_and_version() -> None:
    gone = PrivateUse(
        distribution="Scrapy",
        target="scrapy.core.scheduler:BaseScheduler",
        attribute="_no_such_attribute",
        why="a synthetic use for this test",
    )
    with pytest.raises(PrivateApiMissing) as raised:
        check_private_api((gone,))
    message = str(raised.value)
    assert "\n" not in message
    assert f"Scrapy {version('Scrapy')} has no " in message
    assert "scrapy.core.scheduler:BaseScheduler._no_such_attribute" in message
    assert "a synthetic use for this test" in message


def test_a_missing_module_or_class_counts_as_missing() -> None:
    uses = (
        PrivateUse("Scrapy", "scrapy.no_such_module:Thing", "x", "a synthetic module"),
        PrivateUse("Scrapy", "scrapy.core.scheduler:NoSuchClass", "x", "a synthetic class"),
    )
    problems = missing_private_api(uses)
    assert len(problems) == 2
    assert all(problem.startswith(f"Scrapy {version('Scrapy')} has no ") for problem in problems)


def test_the_scheduler_runs_the_guard_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Until the add-on calls it, the leasing scheduler's from_crawler does."""
    gone = PrivateUse("Scrapy", "scrapy:Spider", "_gone", "a synthetic use")
    monkeypatch.setattr(
        crawlers.frontier.scheduler, "check_private_api", lambda: check_private_api((gone,))
    )
    crawler = get_crawler(settings_dict={"REDIS_URL": "redis://127.0.0.1:1/0"})
    with pytest.raises(PrivateApiMissing, match="_gone"):
        crawlers.frontier.scheduler.LeasingScheduler.from_crawler(crawler)
