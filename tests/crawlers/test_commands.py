"""The project's Scrapy commands (crawlers/commands): ``scrapy crawl`` with one-line mistakes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scrapy.spiderloader import get_spider_loader
from scrapy.utils.project import get_project_settings

from core.config import OperatorError
from crawlers.commands import check_site
from crawlers.profiles import profile_sites
from harness.demo_site import DemoSite
from tests.crawlers.support import REPO_ROOT, crawl_env

# Every profile names a site (derived: a new profile needs no edit here).
KNOWN = ", ".join(profile_sites())


def scrapy(
    *args: str, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *args],
        cwd=REPO_ROOT,
        env={**crawl_env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_check_site_names_the_known_sites_and_where_they_are_declared() -> None:
    loader = get_spider_loader(get_project_settings())
    check_site(loader, "demo")
    with pytest.raises(OperatorError) as info:
        check_site(loader, "nosuchsite")
    assert info.value.message == (
        f"unknown site 'nosuchsite': known sites are {KNOWN}; see crawlers/profiles/"
    )
    assert sorted(loader.list()) == sorted(profile_sites())  # one spider per profile


def test_crawling_an_unknown_site_is_one_line_and_exit_2_with_nothing_started() -> None:
    result = scrapy("crawl", "nosuchsite")
    assert (result.returncode, result.stdout) == (2, ""), result.stderr[-2000:]
    assert result.stderr.splitlines() == [
        f"unknown site 'nosuchsite': known sites are {KNOWN}; see crawlers/profiles/"
    ]


def test_a_site_of_spider_modules_set_on_the_command_line_is_known(tmp_path: Path) -> None:
    output = tmp_path / "items.jsonl"
    result = scrapy(
        "crawl", "bad_items", "-s", "SPIDER_MODULES=tests.crawlers.pipelines.spiders",
        "--nolog", "-O", str(output),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert output.read_text().strip()


def test_scrapy_usage_errors_stay_scrapy_s() -> None:
    none, two = scrapy("crawl"), scrapy("crawl", "demo", "g2")
    assert none.returncode == two.returncode == 2
    assert "more than one spider is not supported" in two.stderr
    assert scrapy("crawl", "-h").returncode == 0


def test_crawl_keeps_its_arguments_settings_and_feeds(demo_site: DemoSite, tmp_path: Path) -> None:
    output = tmp_path / "items.jsonl"
    output.write_text('{"kept": true}\n')
    result = scrapy(
        "crawl", "demo", "-a", f"base_url={demo_site.url}",
        "-s", "CLOSESPIDER_ITEMCOUNT=3", "-s", "LOG_LEVEL=INFO",
        "-o", f"{output}:jsonlines",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    assert rows[0] == {"kept": True}  # -o appends
    items = rows[1:]
    assert len(items) >= 3 and all(item["url"].startswith(demo_site.url) for item in items)
    assert "'finish_reason': 'closespider_itemcount'" in result.stderr


PROXY_FORM = (
    "expected scheme://[user:password@]host:port with scheme http or https "
    "(e.g. http://user:secret@10.0.0.1:8080)"
)


@pytest.mark.parametrize(
    ("how", "line"),
    [
        (
            {"env": {"PROXY_LIST": "http://u:pw@10.0.0.1:8080,ftp://u:hunter2@x"}},
            f"configuration error: PROXY_LIST entry 'ftp://u:****@x' is not a proxy: {PROXY_FORM}",
        ),
        (
            {"args": ["-s", "ROTATING_PROXY_LIST=not a proxy,ftp://x"]},
            "configuration error: ROTATING_PROXY_LIST (PROXY_LIST) entry 'not a proxy' is not "
            f"a proxy: {PROXY_FORM}",
        ),
        (
            {"args": ["-a", "base_url=notaurl"]},
            "configuration error: -a base_url='notaurl' must start with http:// or https://: "
            "set -a base_url like http://127.0.0.1:8000, or unset it",
        ),
        (
            {
                "env": {"CHROMIUM_PATH": "/nonexistent/chromium"},
                "args": ["-s", "RENDER_MODE=always", "-s", "FETCH_IDENTITY=crawler"],
            },
            "configuration error: CHROMIUM_PATH='/nonexistent/chromium' is not an executable "
            "file, and site 'demo' renders pages (RENDER_MODE=always): install Chromium "
            "(apt-get install chromium) or set CHROMIUM_PATH to its binary",
        ),
    ],
    ids=["proxy-list-env", "proxy-list-setting", "base-url", "chromium-path"],
)
def test_operator_mistakes_are_one_line_and_exit_2_before_any_request(
    how: dict[str, Any], line: str
) -> None:
    args = how.get("args", [])
    if not any(arg.startswith("base_url=") for arg in args):
        args = [*args, "-a", "base_url=http://127.0.0.1:1"]  # nothing listens: never reached
    result = scrapy("crawl", "demo", *args, env=how.get("env"))
    assert (result.returncode, result.stdout) == (2, ""), result.stderr[-3000:]
    assert result.stderr.splitlines() == [line], result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "hunter2" not in result.stderr
