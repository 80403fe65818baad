"""Debian's Chromium, driven by scrapy-playwright with the platform's settings, runs JS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config import get_settings
from harness.demo_site import DemoSite
from standins.demo_site.catalog import build_catalog

REPO_ROOT = Path(__file__).resolve().parents[2]

RENDER_SPIDER = textwrap.dedent(
    """
    import scrapy
    from scrapy_playwright.page import PageMethod

    class RenderSpider(scrapy.Spider):
        name = "render_check"
        custom_settings = {
            "DOWNLOAD_HANDLERS": {
                "http": "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler",
                "https": "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler",
            },
            "ROBOTSTXT_OBEY": False,
            # Plain dicts are not platform items: keep the validation pipeline out of it.
            "ITEM_PIPELINES": {},
        }

        def __init__(self, url, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.url = url

        async def start(self):
            yield scrapy.Request(
                self.url,
                meta={
                    "playwright": True,
                    "playwright_page_methods": [
                        PageMethod("wait_for_selector", "#reviews[data-loaded=true]"),
                    ],
                },
            )

        def parse(self, response):
            yield {
                "authors": response.css("#reviews .review .review-author::text").getall(),
                "reviews": len(response.css("#reviews .review")),
            }
    """
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSite]:
    with DemoSite(run_dir=tmp_path_factory.mktemp("chromium-site")) as server:
        yield server


def test_chromium_is_debians_package() -> None:
    path = get_settings().chromium_executable()
    assert path is not None and Path(path).exists(), "Debian's chromium is not installed"
    version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    assert "Chromium" in version.stdout


def test_js_only_reviews_are_rendered_by_chromium(site: DemoSite, tmp_path: Path) -> None:
    product = next(p for p in build_catalog().products if len(p.reviews) >= 3)
    # The plain HTML has an empty container: only a browser that runs the page's script
    # fills it.
    spider_file = tmp_path / "render_spider.py"
    spider_file.write_text(RENDER_SPIDER)
    out = tmp_path / "rendered.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "ELASTICSEARCH_URL")}
    url = f"{site.url}/product/{product.sku}"
    argv = [sys.executable, "-m", "scrapy", "runspider", str(spider_file)]
    done = subprocess.run(
        [*argv, "-a", f"url={url}", "-O", str(out)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 1, done.stderr[-3000:]
    assert rows[0]["reviews"] == len(product.reviews)
    assert rows[0]["authors"] == [review.author for review in product.reviews]
