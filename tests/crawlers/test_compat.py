"""The start-up guard of private library uses (crawlers/compat.py), and the check that it
declares every one the platform's source makes (tests/crawlers/private_uses.py)."""

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
from tests.crawlers.private_uses import PLATFORM, Use, find_private_uses, platform_sources


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


# -- the platform's source against the declaration ------------------------------------------

# A private submodule is found as what its import names: an attribute of its package.
ATTRIBUTE_KINDS = {
    "attribute": "attribute",
    "instance attribute": "attribute",
    "module": "attribute",
}


def declared(uses: tuple[PrivateUse, ...] = PRIVATE_USES) -> set[tuple[str, str]]:
    return {(ATTRIBUTE_KINDS.get(use.kind, use.kind), use.attribute) for use in uses}


def found(uses: list[Use]) -> set[tuple[str, str]]:
    return {(use.kind, use.name) for use in uses}


@pytest.fixture(scope="module")
def platform() -> dict[str, str]:
    return platform_sources()


@pytest.fixture(scope="module")
def platform_uses(platform: dict[str, str]) -> list[Use]:
    """The platform's private uses, scanned once for the module (the scan reads every file)."""
    return find_private_uses(platform)


def test_the_platform_uses_exactly_the_declared_private_names(
    platform: dict[str, str], platform_uses: list[Use]
) -> None:
    uses = platform_uses
    undeclared = [str(use) for use in uses if (use.kind, use.name) not in declared()]
    assert undeclared == [], "declare these in crawlers/compat.py PRIVATE_USES, or replace them"
    unused = declared() - found(uses)
    assert unused == set(), "declared in crawlers/compat.py but no longer used: remove them"
    assert {path.split("/")[0] for path in platform} == set(PLATFORM)


def test_the_issue_s_private_uses_are_gone(platform_uses: list[Use]) -> None:
    names = {name for _, name in found(platform_uses)}
    gone = {"_spiders", "_found", "_load_policy", "_rotating_proxy", "_ban", "_auth_proxy"}
    assert names & gone == set()


SNIPPET = """
from scrapy.spiderloader import SpiderLoader
from urllib.request import _parse_proxy
from crawlers.fetch.redact import _USERINFO

OWN_META = "_own_key"


class Loader(SpiderLoader):
    def __init__(self, settings):
        super().__init__(settings)
        self._mine = {}
        self._spiders["x"] = None
        self._mine["x"] = self._found


class Plain:
    def __init__(self):
        self._found = []
        self._cache = None

    def read(self, request, response, crawler):
        request.meta["_ban"] = True
        if not request.meta.get("_rotating_proxy"):
            request.meta.pop("_auth_proxy", None)
        if "_scheme_proxy" in response.meta:
            return getattr(crawler, "_apply_settings")
        request.meta[OWN_META] = self._cache
        return Request("http://x", meta={"_download_slot_key": 1}), crawler.engine._slot
"""


def test_a_new_private_use_is_found_wherever_it_is() -> None:
    assert [str(use) for use in find_private_uses({"crawlers/new.py": SNIPPET})] == [
        "crawlers/new.py:27: attribute _apply_settings",
        # Ours elsewhere (Plain binds _found) does not make Scrapy's loader's _found ours.
        "crawlers/new.py:14: attribute _found",
        "crawlers/new.py:3: attribute _parse_proxy",
        "crawlers/new.py:29: attribute _slot",
        "crawlers/new.py:13: attribute _spiders",
        "crawlers/new.py:25: meta key _auth_proxy",
        "crawlers/new.py:23: meta key _ban",
        "crawlers/new.py:29: meta key _download_slot_key",
        "crawlers/new.py:24: meta key _rotating_proxy",
        "crawlers/new.py:26: meta key _scheme_proxy",
    ]  # and nothing of ours: _USERINFO, self._mine, self._cache, OWN_META


def test_the_platform_check_fails_on_one_new_private_use(platform: dict[str, str]) -> None:
    sneaky = "def proxy(request):\n    return request.meta.get('_auth_proxy')\n"
    uses = find_private_uses({**platform, "crawlers/fetch/sneaky.py": sneaky})
    assert found(uses) - declared() == {("meta key", "_auth_proxy")}


def test_a_private_submodule_must_still_import() -> None:
    present = PrivateUse("Twisted", "twisted.web", "_newclient", "x", "module")
    gone = PrivateUse("Twisted", "twisted.web", "_no_such_module", "x", "module")
    assert missing_private_api((present,)) == []
    assert len(missing_private_api((gone,))) == 1


def test_instance_attributes_and_meta_keys_are_checked_in_the_library_s_source() -> None:
    proxy, loader = "scrapy.downloadermiddlewares.httpproxy", "scrapy.spiderloader:SpiderLoader"
    present = (
        PrivateUse("Scrapy", proxy, "_auth_proxy", "x", "meta key"),
        PrivateUse("Scrapy", loader, "_found", "x", "instance attribute"),
    )
    assert missing_private_api(present) == []
    gone = (
        PrivateUse("Scrapy", proxy, "_no_key", "x", "meta key"),
        PrivateUse("Scrapy", loader, "_nothing", "x", "instance attribute"),
        PrivateUse("Scrapy", "scrapy.no_such_module", "_auth_proxy", "x", "meta key"),
    )
    assert len(missing_private_api(gone)) == 3
