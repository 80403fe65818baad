"""A bad profile reaches the operator as one line: ``python -m crawlers.profiles check``, a
``scrapy crawl`` of the site and its producer all name the file, the key and the fix."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from scrapy.utils.project import get_project_settings

from core.config import ConfigurationError
from crawlers.cli.producer import produce
from crawlers.profiles import profile_sites
from tests.crawlers.support import crawl_env

REPO_ROOT = Path(__file__).resolve().parents[2]
GOOD = 'item_type = "p"\nbase_url = "https://shop.example"\n'
BAD = GOOD + '[politeness]\nconcurrency_per_domain = "sixteen"\n'
PROBLEM = 'politeness.concurrency_per_domain: expected an integer, got "sixteen"'

# A site whose spider reads its profile from the spider's own directory, so a test can break
# the profile without touching crawlers/profiles/ (which other tests load at the same time).
SPIDER = """
from pathlib import Path

from crawlers.profiles import SiteProfile
from crawlers.spiders.base import SiteSpider


class ShopSpider(SiteSpider):
    name = "shop"

    @classmethod
    def load_profile(cls) -> SiteProfile:
        return SiteProfile.load(cls.name, Path(__file__).parent)
"""
SPIDER_MODULES = "profile_test_shop.spiders"


def check(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "crawlers.profiles", "check", *args]
    return subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)


def test_check_passes_every_profile_of_the_repository() -> None:
    done = check()
    assert done.returncode == 0, done.stdout + done.stderr
    expected = [f"crawlers/profiles/{site}.toml: ok" for site in profile_sites()]
    assert done.stdout.splitlines() == expected
    assert done.stderr == ""


def test_check_names_each_bad_profile_and_fails(tmp_path: Path) -> None:
    (tmp_path / "good.toml").write_text(GOOD)
    (tmp_path / "bad.toml").write_text(BAD)
    done = check("--dir", str(tmp_path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        f"{tmp_path / 'bad.toml'}: {PROBLEM}",
        f"{tmp_path / 'good.toml'}: ok",
    ]


def test_check_of_a_directory_without_profiles_fails(tmp_path: Path) -> None:
    done = check("--dir", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr == f"no profiles (<site>.toml) in {tmp_path}\n"


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The shop spider's package under ``tmp_path`` (importable here and in a subprocess);
    yields the directory its profile ``shop.toml`` goes in."""
    package = tmp_path / "profile_test_shop"
    package.mkdir()
    (package / "__init__.py").touch()
    (package / "spiders.py").write_text(SPIDER)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield package
    for name in [m for m in sys.modules if m.startswith("profile_test_shop")]:
        del sys.modules[name]


def crawl_shop(shop: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        "shop",
        "-s",
        f"SPIDER_MODULES={SPIDER_MODULES}",
    ]
    env = {**crawl_env(), "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(shop.parent)])}
    return subprocess.run(
        [*argv, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_a_bad_profile_stops_scrapy_crawl_with_one_line(shop: Path) -> None:
    (shop / "shop.toml").write_text(BAD)
    bad_profile = crawl_shop(shop)
    assert "Traceback" not in bad_profile.stderr, bad_profile.stderr[-3000:]
    lines = bad_profile.stderr.strip().splitlines()
    assert lines[-1] == f"configuration error: {shop / 'shop.toml'}: {PROBLEM}", lines[-5:]
    assert sum(PROBLEM in line for line in lines) == 1

    # It exits like every other configuration mistake of a crawl (core.config's
    # ConfigurationError), here a malformed setting with a valid profile.
    (shop / "shop.toml").write_text(GOOD)
    bad_setting = crawl_shop(shop, "-s", "FRONTIER_ALWAYS_ON=maybe")
    assert "configuration error: FRONTIER_ALWAYS_ON='maybe'" in bad_setting.stderr
    assert bad_profile.returncode == bad_setting.returncode != 0


def test_a_bad_profile_stops_the_producer_before_anything_is_enqueued(shop: Path) -> None:
    (shop / "shop.toml").write_text(BAD)
    settings = get_project_settings()
    settings.set("SPIDER_MODULES", [SPIDER_MODULES], priority="cmdline")
    # Never connected: the profile is read before the producer touches Redis.
    server = redis.Redis(host="127.0.0.1", port=1)
    with pytest.raises(ConfigurationError) as info:
        produce(server, "shop", settings=settings)
    assert str(info.value) == f"configuration error: {shop / 'shop.toml'}: {PROBLEM}"
