"""Scrapy settings are the crawl's one interface: the environment table, precedence, errors.

Unit tests of ``core.config.ENVIRONMENT`` -> ``crawlers.runtime.environment`` -> the add-on, and
two real ``scrapy crawl`` runs: an operator's mistake is one line, and a crawl configured
only by ``-s REDIS_URL=... -s ELASTICSEARCH_URL=...`` (no platform environment at all)
runs the frontier and stores every product.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import redis
from elasticsearch import Elasticsearch
from pydantic import SecretStr
from scrapy.crawler import Crawler
from scrapy.settings import Settings

from core.config import (
    ENVIRONMENT,
    ConfigurationError,
    CrawlEnvironment,
    PlatformSettings,
    redacted,
    secret_value,
)
from crawlers import defaults
from crawlers.addon import check_settings
from crawlers.profiles import SiteProfile
from crawlers.runtime.environment import settings_from_environment
from crawlers.spiders.demo import DemoSpider
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
from tests.source import parsed

CRAWLERS = REPO_ROOT / "crawlers"
MAPPING_MODULE = CRAWLERS / "runtime" / "environment.py"
PLATFORM_ADDON = {"crawlers.addon.ScrapingPlatform": 0}
PRODUCTS = 40
SECRET = "s3cr3t-never-logged"

# -- no crawl component reads the environment -------------------------------------------------

ENV_READERS = {"get_settings", "PlatformSettings", "CrawlEnvironment", "crawl_environment"}


def environment_reads(source: str) -> list[str]:
    """Where ``source`` reads the environment or the platform settings object, by line."""
    found = []
    for node in ast.walk(parsed(source)):
        where = f"line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb"):
            found.append(f"{where}: os.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            names = {alias.name for alias in node.names} & {"environ", "getenv", "environb"}
            found += [f"{where}: from os import {name}" for name in sorted(names)]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in ENV_READERS:
                found.append(f"{where}: {name}()")
    return found


def test_no_crawl_module_but_the_mapping_reads_the_environment() -> None:
    offenders = {
        str(path.relative_to(REPO_ROOT)): reads
        for path in sorted(CRAWLERS.rglob("*.py"))
        if path != MAPPING_MODULE and (reads := environment_reads(path.read_text()))
    }
    assert offenders == {}, (
        "read crawler.settings (crawlers/runtime/environment.py maps the environment)"
    )
    # The mapping module itself is what the scan would catch elsewhere.
    assert environment_reads(MAPPING_MODULE.read_text()) != []


def test_the_scan_catches_every_way_to_read_the_environment() -> None:
    source = (
        "import os\n"
        "from os import environ, getenv\n"
        "from core import config\n"
        "a = os.environ['REDIS_URL']\n"
        "b = os.getenv('REDIS_URL')\n"
        "c = config.get_settings().redis_url\n"
        "d = PlatformSettings().redis_url\n"
        "e = os.environ.get('X', 'y')\n"
    )
    assert environment_reads(source) == [
        "line 2: from os import environ",
        "line 2: from os import getenv",
        "line 4: os.environ",
        "line 5: os.getenv",
        "line 6: get_settings()",
        "line 7: PlatformSettings()",
        "line 8: os.environ",
    ]
    assert environment_reads("x = settings.get('REDIS_URL')\n") == []


# -- the table -------------------------------------------------------------------------------


def test_the_table_names_every_variable_the_platform_parses() -> None:
    assert sorted(v.name.lower() for v in ENVIRONMENT) == sorted(CrawlEnvironment.model_fields)
    assert set(PlatformSettings.model_fields) < set(CrawlEnvironment.model_fields)
    for variable in ENVIRONMENT:
        if variable.secret:
            field = CrawlEnvironment.model_fields[variable.name.lower()]
            assert "SecretStr" in str(field.annotation), variable.name
        if variable.setting is not None:
            assert variable.setting.isupper() and hasattr(defaults, variable.setting)


def test_docs_list_every_variable_setting_and_default() -> None:
    text = (REPO_ROOT / "docs" / "configuration.md").read_text()
    missing = [v.name for v in ENVIRONMENT if f"`{v.name}`" not in text]
    missing += [v.setting for v in ENVIRONMENT if v.setting and f"`{v.setting}`" not in text]
    missing += [name for name in dir(defaults) if name.isupper() and f"`{name}`" not in text]
    assert missing == []


def test_environment_becomes_settings(tmp_path: Path) -> None:
    proxies = tmp_path / "proxies.txt"
    proxies.write_text("# ours\nhttp://p3:8080\n\nhttp://p4:8080\n")
    settings = settings_from_environment(
        {
            "REDIS_URL": "redis://127.0.0.1:6379/0",
            "ELASTICSEARCH_URL": "http://127.0.0.1:9200",
            "ELASTICSEARCH_USERNAME": "platform",
            "ELASTICSEARCH_PASSWORD": SECRET,
            "elasticsearch_api_key": "key-" + SECRET,  # names are case-insensitive
            "SCRAPE_JOB_ID": "demo-job-1",
            "PLATFORM_RUN_DIR": str(tmp_path),
            "STORE_SPILL_DIR": str(tmp_path / "spill-here"),
            "DEMO_SITE_URL": "http://127.0.0.1:8123",
            "FACEBOOK_SESSION_COOKIES": "c_user=1; xs=" + SECRET,
            "PROXY_LIST": "http://p1:8080, http://p2:8080",
            "PROXY_LIST_FILE": str(proxies),
            "CHROMIUM_PATH": "/opt/chromium/chrome",
            "SLACK_WEBHOOK_URL": "http://hooks.example/" + SECRET,  # not a crawl setting
            "HOME": "/root",  # not the platform's
        }
    )
    secrets = {"ELASTICSEARCH_PASSWORD", "ELASTICSEARCH_API_KEY", "FACEBOOK_SESSION_COOKIES"}
    plain = {name: value for name, value in settings.items() if name not in secrets}
    assert plain == {
        "REDIS_URL": "redis://127.0.0.1:6379/0",
        "ELASTICSEARCH_URL": "http://127.0.0.1:9200",
        "ELASTICSEARCH_USERNAME": "platform",
        "JOB_ID": "demo-job-1",
        "PLATFORM_RUN_DIR": str(tmp_path),
        "STORE_SPILL_DIR": str(tmp_path / "spill-here"),
        "DEMO_SITE_URL": "http://127.0.0.1:8123",
        "ROTATING_PROXY_LIST": [f"http://p{n}:8080" for n in (1, 2, 3, 4)],
        "PLAYWRIGHT_LAUNCH_OPTIONS": {
            **defaults.PLAYWRIGHT_LAUNCH_OPTIONS,
            "executable_path": "/opt/chromium/chrome",
        },
    }
    assert all(isinstance(settings[name], SecretStr) for name in secrets)
    assert secret_value(settings["ELASTICSEARCH_PASSWORD"]) == SECRET
    assert secret_value(settings["FACEBOOK_SESSION_COOKIES"]) == "c_user=1; xs=" + SECRET
    assert SECRET not in repr(settings) and SECRET not in str(settings)


def test_unset_variables_leave_the_defaults() -> None:
    assert settings_from_environment({}) == {}
    assert settings_from_environment({"PROXY_LIST": "http://p1:8080"}) == {
        "ROTATING_PROXY_LIST": ["http://p1:8080"]
    }


# -- precedence: the Scrapy way --------------------------------------------------------------


def crawl_settings(
    spidercls: type = DemoSpider,
    environ: dict[str, str] | None = None,
    cmdline: dict[str, Any] | None = None,
    project: dict[str, Any] | None = None,
) -> Settings:
    """Settings as ``scrapy crawl`` builds them with the platform's project settings.py:
    the environment (and ``project``) at 'project' priority, ``-s`` at 'cmdline', then
    the spider's update_settings (custom_settings, profile) and the add-on."""
    settings = Settings()
    settings.setdict({"ADDONS": PLATFORM_ADDON, **(project or {})}, priority="project")
    settings.setdict(settings_from_environment(environ or {}), priority="project")
    settings.setdict(cmdline or {}, priority="cmdline")
    crawler = Crawler(spidercls, settings)
    crawler.addons.load_settings(crawler.settings)
    return crawler.settings


class CustomDemoSpider(DemoSpider):
    custom_settings: ClassVar[dict[str, Any]] = {"REDIS_URL": "redis://custom:6379/0"}


class ProfiledDemoSpider(DemoSpider):
    @classmethod
    def load_profile(cls) -> SiteProfile:
        raw = {"item_type": "demo_product", "base_url": "http://127.0.0.1:8000"}
        return SiteProfile.from_dict(
            "demo", {**raw, "settings": {"ROTATING_PROXY_LIST": ["http://profile:1"]}}
        )


def test_the_add_on_defaults_apply_without_environment() -> None:
    settings = crawl_settings()
    assert settings["REDIS_URL"] is None and settings["ELASTICSEARCH_URL"] is None
    assert settings.getfloat("STORE_FLUSH_INTERVAL") == defaults.STORE_FLUSH_INTERVAL
    assert settings["DEMO_SITE_URL"] == defaults.DEMO_SITE_URL
    # No frontier: Scrapy's scheduler, watching that every request ends (frontier/fates).
    assert settings["SCHEDULER"] == "crawlers.frontier.local.LocalScheduler"
    assert "crawlers.frontier.worker.FrontierWorker" not in settings.getdict("EXTENSIONS")
    pipelines = settings.getdict("ITEM_PIPELINES")
    assert sorted(pipelines, key=pipelines.__getitem__) == [
        "crawlers.pipelines.validate.ValidationPipeline",
        "crawlers.pipelines.dedup.DedupPipeline",
        "crawlers.pipelines.history.HistoryPipeline",
        "crawlers.pipelines.store.StorePipeline",
        "crawlers.recrawl.cards.CardsPipeline",
        "crawlers.pipelines.recrawl.RecrawlRecordPipeline",
    ]
    middlewares = settings.getdict("DOWNLOADER_MIDDLEWARES")
    assert middlewares["scrapy.downloadermiddlewares.retry.RetryMiddleware"] is None
    assert middlewares["scrapy.downloadermiddlewares.redirect.RedirectMiddleware"] is None
    assert middlewares["crawlers.fetch.retry.BlockRetryMiddleware"] == 585
    handler = "crawlers.fetch.rendering.ResilientPlaywrightHandler"
    assert settings.getdict("DOWNLOAD_HANDLERS") == {"http": handler, "https": handler}
    # The demo profile (spider priority) beats the add-on's politeness defaults.
    assert settings.getbool("AUTOTHROTTLE_ENABLED") is False


def test_environment_sets_and_redis_url_switches_the_frontier_on() -> None:
    settings = crawl_settings(environ={"REDIS_URL": "redis://env:6379/0"})
    assert settings["REDIS_URL"] == "redis://env:6379/0"
    assert settings["SCHEDULER"] == "crawlers.frontier.scheduler.LeasingScheduler"
    assert settings["SCHEDULER_QUEUE_CLASS"] == "crawlers.frontier.queue.LeasedQueue"
    assert settings["DUPEFILTER_CLASS"] == "crawlers.frontier.queue.JobDupeFilter"
    assert settings.getbool("SCHEDULER_PERSIST") is True
    assert settings.getdict("REDIS_PARAMS")["socket_timeout"] == 5
    assert settings.getdict("EXTENSIONS")["crawlers.frontier.worker.FrontierWorker"] == 100


def test_command_line_beats_environment() -> None:
    settings = crawl_settings(
        environ={"REDIS_URL": "redis://env:6379/0", "PROXY_LIST": "http://env:1"},
        cmdline={"REDIS_URL": "redis://cmdline:6379/0", "ROTATING_PROXY_LIST": "http://cli:1"},
    )
    assert settings["REDIS_URL"] == "redis://cmdline:6379/0"
    assert settings.getlist("ROTATING_PROXY_LIST") == ["http://cli:1"]


def test_custom_settings_and_profiles_beat_environment_and_cmdline_beats_them() -> None:
    custom = crawl_settings(CustomDemoSpider, environ={"REDIS_URL": "redis://env:6379/0"})
    assert custom["REDIS_URL"] == "redis://custom:6379/0"
    profiled = crawl_settings(ProfiledDemoSpider, environ={"PROXY_LIST": "http://env:1"})
    assert profiled.getlist("ROTATING_PROXY_LIST") == ["http://profile:1"]
    cmdline = crawl_settings(
        ProfiledDemoSpider,
        environ={"PROXY_LIST": "http://env:1"},
        cmdline={"ROTATING_PROXY_LIST": ["http://cli:1"]},
    )
    assert cmdline.getlist("ROTATING_PROXY_LIST") == ["http://cli:1"]


def test_a_project_keeps_the_components_it_lists() -> None:
    store, sink = "crawlers.pipelines.store.StorePipeline", "tests.crawlers.support.RedisItemSink"
    settings = crawl_settings(project={"ITEM_PIPELINES": {store: None, sink: 50}})
    assert settings.getdict("ITEM_PIPELINES") == {
        store: None,
        sink: 50,
        "crawlers.pipelines.validate.ValidationPipeline": 100,
        "crawlers.pipelines.dedup.DedupPipeline": 200,
        "crawlers.pipelines.history.HistoryPipeline": 250,
        "crawlers.recrawl.cards.CardsPipeline": 390,
        "crawlers.pipelines.recrawl.RecrawlRecordPipeline": 400,
    }


class NoPipelinesSpider(DemoSpider):
    custom_settings: ClassVar[dict[str, Any]] = {"ITEM_PIPELINES": {}}


def test_a_whole_component_dict_from_a_spider_or_the_command_line_replaces_the_add_ons() -> None:
    sink = "tests.crawlers.support.RedisItemSink"
    assert crawl_settings(NoPipelinesSpider).getdict("ITEM_PIPELINES") == {}
    cmdline = crawl_settings(cmdline={"ITEM_PIPELINES": {sink: 100}})
    assert cmdline.getdict("ITEM_PIPELINES") == {sink: 100}
    handlers = {"http": "scrapy.core.downloader.handlers.http11.HTTP11DownloadHandler"}
    custom = crawl_settings(cmdline={"DOWNLOAD_HANDLERS": handlers})
    assert custom.getdict("DOWNLOAD_HANDLERS") == handlers


# -- an operator's mistake: one line naming the setting and the fix -----------------------------


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"REDIS_URL": "localhost:6379"}, "REDIS_URL='localhost:6379' must start with redis://"),
        ({"REDIS_URL": "redis://:pw@host:63x9/0"}, "REDIS_URL='redis://:****@host:63x9/0'"),
        ({"ELASTICSEARCH_URL": "es:9200"}, "ELASTICSEARCH_URL='es:9200' must start with"),
        ({"PROXY_LIST_FILE": "/nonexistent/proxies.txt"}, "PROXY_LIST_FILE='/nonexistent/"),
    ],
)
def test_a_malformed_variable_is_named_with_its_fix(environ: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        settings_from_environment(environ)
    message = str(info.value)
    assert message.startswith(f"configuration error: {named}") and "\n" not in message
    assert "set " in message or "point it at" in message
    assert "pw" not in message


@pytest.mark.parametrize(
    ("name", "value", "kind"),
    [
        ("FRONTIER_ALWAYS_ON", "maybe", "a boolean"),
        ("STORE_FLUSH_INTERVAL", "soon", "a number"),
        ("REDIS_URL", "http://redis:6379", "must start with redis://"),
        ("ROTATING_PROXY_LIST_PATH", "/nonexistent/list", "cannot be read"),
    ],
)
def test_a_malformed_setting_is_named_with_its_fix(name: str, value: str, kind: str) -> None:
    with pytest.raises(ConfigurationError, match=f"^configuration error: {name}=.*{kind}"):
        crawl_settings(cmdline={name: value})
    settings = Settings({"FRONTIER_ALWAYS_ON": "true", "STORE_FLUSH_INTERVAL": "0.5"})
    check_settings(settings)  # well-formed strings from -s are fine


def test_redacted_masks_a_url_password() -> None:
    assert redacted("redis://:pw@redis:6379/0") == "redis://:****@redis:6379/0"
    assert redacted("http://user:pw@es:9200") == "http://user:****@es:9200"
    assert redacted("redis://redis:6379/0") == "redis://redis:6379/0"


# -- real crawls -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSite]:
    run_dir = tmp_path_factory.mktemp("settings-site")
    with DemoSite(run_dir=run_dir, products=PRODUCTS, name="settings-site") as server:
        yield server


def scrapy_crawl(
    *args: str, env: dict[str, str] | None = None, cwd: Path = REPO_ROOT, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "scrapy", "crawl", *args]
    return subprocess.run(
        argv, cwd=cwd, env=env or crawl_env(), capture_output=True, text=True, timeout=timeout
    )


def test_a_mistake_stops_the_crawl_with_one_line(site: DemoSite) -> None:
    base = ["demo", "-a", f"base_url={site.url}"]
    bad_setting = scrapy_crawl(*base, "-s", "FRONTIER_ALWAYS_ON=maybe")
    bad_variable = scrapy_crawl(*base, env={**crawl_env(), "REDIS_URL": "localhost:6379"})
    for result, line in [
        (bad_setting, "configuration error: FRONTIER_ALWAYS_ON='maybe' is not a boolean"),
        (bad_variable, "configuration error: REDIS_URL='localhost:6379' must start with"),
    ]:
        assert result.returncode == 2, result.stderr[-2000:]
        assert "Traceback" not in result.stderr, result.stderr[-2000:]
        assert result.stderr.strip().splitlines()[-1].startswith(line), result.stderr[-2000:]


def test_environment_configures_a_crawl_and_its_secrets_never_reach_the_log(
    site: DemoSite, tmp_path: Path
) -> None:
    env = {
        **crawl_env(),
        "ELASTICSEARCH_USERNAME": "platform",
        "ELASTICSEARCH_PASSWORD": SECRET,
        "ELASTICSEARCH_API_KEY": SECRET,
        "FACEBOOK_SESSION_COOKIES": f"c_user=1; xs={SECRET}",
        "DEMO_SITE_URL": site.url,  # the demo spider's base URL without `-a base_url=`
    }
    out = tmp_path / "items.jsonl"
    result = scrapy_crawl("demo", "-O", str(out), "-s", "LOG_LEVEL=DEBUG", env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(out.read_text().splitlines()) == PRODUCTS
    assert SECRET not in result.stderr + result.stdout


@pytest.fixture
def clean(redis_server: RedisServer, es: Elasticsearch) -> Iterator[redis.Redis]:
    server = redis_server.client()
    reset_store(es, server)
    yield server
    reset_store(es, server)


def test_settings_alone_run_the_frontier_into_elasticsearch(
    site: DemoSite,
    clean: redis.Redis,
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
    es: Elasticsearch,
    tmp_path: Path,
) -> None:
    job_id = "settings-only-1"
    run_producer("demo", job_id=job_id, base_url=site.url, redis_url=redis_server.url)
    assert clean.llen("{demo}:start_urls") == 1
    log = tmp_path / "worker.log"
    services = {"REDIS_URL": redis_server.url, "ELASTICSEARCH_URL": es_node.url}
    tuning = {"FRONTIER_IDLE_CLOSE_SECONDS": 2, "STORE_FLUSH_INTERVAL": 0.5, "LOG_FILE": log}
    argv = [sys.executable, "-m", "scrapy", "crawl", "demo", "-a", f"job_id={job_id}"]
    argv += ["-a", f"base_url={site.url}", *settings_argv({**services, **tuning})]
    worker = subprocess.Popen(argv, cwd=REPO_ROOT, env=crawl_env())
    assert wait_all([worker], timeout=240) == [0], log_excerpt(log)
    text = log.read_text()
    assert f"scraping platform: frontier on {redis_server.url}" in text
    assert "crawlers.frontier.worker.FrontierWorker" in text
    assert_stored_once(es, log, job_id, PRODUCTS)
    assert clean.llen("{demo}:start_urls") == 0 and clean.zcard("{demo}:requests") == 0
