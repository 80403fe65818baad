"""The add-on installs the platform into any Scrapy project.

A throwaway project made by ``scrapy startproject`` enables only the add-on and two
settings (REDIS_URL, ELASTICSEARCH_URL) in its own settings.py; its spider is the
platform's demo spider under the project's name space. Enqueued by the producer, it
crawls the demo site through the Redis frontier into Elasticsearch without the
platform's crawlers/settings.py and without any platform environment variable.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from elasticsearch import Elasticsearch

from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from tests.crawlers.pipelines.support import assert_stored_once, reset_store
from tests.crawlers.support import (
    REPO_ROOT,
    crawl_env,
    log_excerpt,
    run_producer,
    settings_argv,
    wait_all,
)

PRODUCTS = 40
PROJECT = "shop"

SPIDER = '''"""The platform's demo spider as this project's own spider."""

from crawlers.spiders.demo import DemoSpider as PlatformDemoSpider


class DemoSpider(PlatformDemoSpider):
    """Same name, so the producer and the profile (crawlers/profiles/demo.toml) match."""
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSite]:
    run_dir = tmp_path_factory.mktemp("addon-site")
    with DemoSite(run_dir=run_dir, products=PRODUCTS, name="addon-site") as server:
        yield server


@pytest.fixture
def clean(redis_server: RedisServer, es: Elasticsearch) -> Iterator[redis.Redis]:
    server = redis_server.client()
    reset_store(es, server)
    yield server
    reset_store(es, server)


def start_project(parent: Path, redis_url: str, es_url: str) -> Path:
    """``scrapy startproject`` + the add-on and the two service settings, nothing else."""
    env = {**crawl_env(), "PYTHONPATH": str(REPO_ROOT)}
    subprocess.run(
        [sys.executable, "-m", "scrapy", "startproject", PROJECT],
        cwd=parent,
        env=env,
        check=True,
        capture_output=True,
    )
    root = parent / PROJECT
    settings = root / PROJECT / "settings.py"
    text = settings.read_text()
    assert "\nADDONS = {}\n" in text  # the template's own (empty) add-ons
    text = text.replace("\nADDONS = {}\n", '\nADDONS = {"crawlers.addon.ScrapingPlatform": 0}\n')
    text += f"\nREDIS_URL = {redis_url!r}\nELASTICSEARCH_URL = {es_url!r}\n"
    settings.write_text(text)
    (root / PROJECT / "spiders" / "demo.py").write_text(SPIDER)
    return root


def test_a_new_project_with_the_add_on_crawls_through_the_frontier_into_elasticsearch(
    site: DemoSite,
    clean: redis.Redis,
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
    es: Elasticsearch,
    tmp_path: Path,
) -> None:
    root = start_project(tmp_path, redis_server.url, es_node.url)
    job_id = "addon-project-1"
    run_producer("demo", job_id=job_id, base_url=site.url, redis_url=redis_server.url, cwd=root)
    assert clean.llen("{demo}:start_urls") == 1

    log = tmp_path / "worker.log"
    # Only the test's pace on the command line: close soon once the frontier is empty.
    tuning = {"FRONTIER_IDLE_CLOSE_SECONDS": 2, "LOG_FILE": log}
    argv = [sys.executable, "-m", "scrapy", "crawl", "demo", "-a", f"job_id={job_id}"]
    argv += ["-a", f"base_url={site.url}", *settings_argv(tuning)]
    # The project's own settings (its scrapy.cfg in cwd), the platform importable.
    env = {**crawl_env(), "PYTHONPATH": str(REPO_ROOT)}
    worker = subprocess.Popen(argv, cwd=root, env=env)
    assert wait_all([worker], timeout=240) == [0], log_excerpt(log)

    text = log.read_text()
    assert f"(bot: {PROJECT})" in text  # the throwaway project, not crawlers/settings.py
    assert "crawlers.addon.ScrapingPlatform" in text
    assert f"scraping platform: frontier on {redis_server.url}" in text
    assert_stored_once(es, log, job_id, PRODUCTS)
    assert clean.llen("{demo}:start_urls") == 0 and clean.zcard("{demo}:priorities") == 0
