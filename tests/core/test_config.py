"""core.config: the platform settings of flows, the search API and CLIs, and their errors.

PlatformSettings is what reads the environment, so these tests construct it from
explicit values (init arguments), never by patching the environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr

from core.config import (
    DEFAULT_RUN_DIR,
    ENVIRONMENT,
    REPO_ROOT,
    ConfigurationError,
    PlatformSettings,
    crawl_environment,
    crawl_values,
    elasticsearch_client_kwargs,
    get_settings,
    settings_elasticsearch_kwargs,
)
from services.demo_site import DemoSite


def test_defaults_are_the_shared_ones() -> None:
    settings = PlatformSettings.model_validate({})
    assert settings.platform_run_dir == DEFAULT_RUN_DIR == REPO_ROOT / ".run"
    assert settings.redis_url is None and settings.proxies() == []
    # A locally started service defaults to the same run directory (one default).
    assert DemoSite().run_dir == get_settings().platform_run_dir


def test_proxies_join_the_inline_list_and_the_file(tmp_path: Path) -> None:
    path = tmp_path / "proxies.txt"
    path.write_text("http://p3:1\n# comment\n\nhttp://p4:1\n")
    settings = PlatformSettings(proxy_list="http://p1:1,\nhttp://p2:1", proxy_list_file=path)  # type: ignore[arg-type]
    assert settings.proxies() == ["http://p1:1", "http://p2:1", "http://p3:1", "http://p4:1"]


def test_secrets_are_masked_everywhere_but_where_used() -> None:
    settings = PlatformSettings(
        elasticsearch_url="http://es:9200",
        elasticsearch_username="platform",
        elasticsearch_password=SecretStr("pw-secret"),
    )
    assert "pw-secret" not in repr(settings) and "pw-secret" not in str(settings.model_dump())
    assert settings.elasticsearch_client_kwargs() == {
        "hosts": ["http://es:9200"],
        "basic_auth": ("platform", "pw-secret"),
    }
    # The same unwrapping from Scrapy settings (plain str from `-s`, SecretStr from env).
    scrapy_like = {"ELASTICSEARCH_URL": "http://es:9200", "ELASTICSEARCH_API_KEY": "k"}
    assert settings_elasticsearch_kwargs(scrapy_like) == elasticsearch_client_kwargs(
        "http://es:9200", api_key=SecretStr("k")
    )


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"redis_url": "127.0.0.1:6379"}, "REDIS_URL='127.0.0.1:6379' must start with redis://"),
        ({"redis_url": "redis://h:port/0"}, "REDIS_URL='redis://h:port/0' is not a valid URL"),
        ({"search_api_url": "search-api:8088"}, "SEARCH_API_URL='search-api:8088' must start"),
        ({"demo_site_url": "http://"}, "DEMO_SITE_URL='http://' names no host"),
        ({"proxy_list_file": "/nonexistent/p.txt"}, "PROXY_LIST_FILE='/nonexistent/p.txt' cannot"),
    ],
)
def test_a_malformed_value_names_the_variable(values: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        PlatformSettings(**values)  # type: ignore[arg-type]
    assert str(info.value) == info.value.code
    assert str(info.value).startswith(f"configuration error: {message}")


def test_a_malformed_variable_ends_a_cli_with_one_line() -> None:
    env = {**os.environ, "REDIS_URL": "redis://:hunter2@redis:notaport/0"}
    result = subprocess.run(
        [sys.executable, "-c", "from core.config import get_settings; get_settings()"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "configuration error: REDIS_URL='redis://:****@redis:notaport/0' is not a valid URL: "
        "set REDIS_URL like redis://[:password@]host:6379/0, or unset it"
    ]


def test_crawl_values_only_for_variables_that_are_set() -> None:
    assert crawl_values(crawl_environment({})) == {}
    values = crawl_values(crawl_environment({"SCRAPE_JOB_ID": "j-1", "CHROMIUM_PATH": "/c"}))
    assert values == {
        "JOB_ID": ("j-1", None),
        "PLAYWRIGHT_LAUNCH_OPTIONS": ("/c", "executable_path"),
    }
    # Only flows/the search API read these: no crawl setting.
    assert {v.name for v in ENVIRONMENT if v.setting is None} == {
        "PREFECT_API_URL",
        "SEARCH_API_URL",
        "SLACK_WEBHOOK_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "EMBEDDING_MODEL",
        "EMBEDDING_MAX_RETRIES",
    }
