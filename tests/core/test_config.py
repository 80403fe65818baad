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
    OperatorError,
    PlatformSettings,
    check_elasticsearch_url,
    crawl_environment,
    crawl_values,
    elasticsearch_client_kwargs,
    get_settings,
    redacted,
    settings_elasticsearch_kwargs,
)
from harness.demo_site import DemoSite


def test_defaults_are_the_shared_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    # The defaults, whatever the shell running the tests sets (a PLATFORM_RUN_DIR).
    for variable in ENVIRONMENT:
        monkeypatch.delenv(variable.name, raising=False)
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
        # urlsplit takes these; the clients refused them with a traceback at first use.
        (
            {"elasticsearch_url": "http://not a url"},
            "ELASTICSEARCH_URL='http://not a url' is not a valid URL",
        ),
        ({"redis_url": "redis://:pw@[::1/0"}, "REDIS_URL='redis://****@[::1/0' is not a valid"),
    ],
)
def test_a_malformed_value_names_the_variable(values: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        PlatformSettings(**values)  # type: ignore[arg-type]
    assert str(info.value) == info.value.message
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
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "configuration error: REDIS_URL='redis://:****@redis:notaport/0' is not a valid URL: "
        "set REDIS_URL like redis://[:password@]host:6379/0, or unset it"
    ]


ENTRY_POINTS = {
    "scrapy crawl": ["-m", "scrapy", "crawl", "demo"],
    "producer": ["-m", "crawlers.cli.producer", "demo"],
    "store drain": ["-m", "crawlers.cli.spill", "drain", "demo"],
    "search CLI": ["-m", "search", "torch"],
    "search API": ["-m", "search.api"],
    "indexing CLI": ["-m", "indexing", "process", "--site", "demo", "--job", "j"],
    "flows": ["-m", "orchestration.local_stack", "flow", "scrape", "--site", "demo"],
}
# Malformed in ways urlsplit alone accepts (a space in the host, two ports).
MALFORMED = {"ELASTICSEARCH_URL": "http://not a url", "REDIS_URL": "redis://:pw@redis:6379:1/0"}


@pytest.mark.integration  # ten CLI processes, scrapy's among them
@pytest.mark.parametrize(
    ("entry_point", "variable"),
    [(entry, "ELASTICSEARCH_URL") for entry in ENTRY_POINTS]
    + [(entry, "REDIS_URL") for entry in ("scrapy crawl", "producer", "indexing CLI")],
)
def test_every_entry_point_ends_on_a_malformed_url_with_one_line(
    entry_point: str, variable: str
) -> None:
    names = {v.name for v in ENVIRONMENT} | {"SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT"}
    env = {k: v for k, v in os.environ.items() if k.upper() not in names}
    result = subprocess.run(
        [sys.executable, *ENTRY_POINTS[entry_point]],
        cwd=REPO_ROOT,
        env={**env, variable: MALFORMED[variable]},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (result.returncode, result.stdout) == (2, ""), result.stderr[-2000:]
    [line] = result.stderr.splitlines()
    assert line.startswith(f"configuration error: {variable}=") and "is not a valid URL" in line
    assert "set " in line and "pw" not in line


def test_an_operator_error_reports_itself_once_as_it_ends_the_process(
    capsys: pytest.CaptureFixture[str],
) -> None:
    error = OperatorError("unknown site 'x': known sites are demo")
    assert (str(error), error.message) == (error.message, "unknown site 'x': known sites are demo")
    assert capsys.readouterr().err == ""  # raised and caught: nothing printed
    # Python reads ``code`` once as an uncaught SystemExit ends the process.
    assert (error.code, error.code) == (2, 2)
    assert capsys.readouterr().err == "unknown site 'x': known sites are demo\n"


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
        "CHAT_MODEL",
        "FINGERPRINT_SITES_DIR",
        "SITE_PROFILES_DIR",
        "GATE_APPROVAL_TIMEOUT",
        "JOB_ERRORS_WARN_PER_1000_PAGES",
        "KIBANA_PUBLIC_URL",
        "PROGRESS_LOG_INTERVAL",
    }


def test_elasticsearch_url_may_list_the_nodes_of_a_cluster() -> None:
    listed = "http://127.0.0.1:9201, http://127.0.0.1:9202,http://127.0.0.1:9203"
    joined = "http://127.0.0.1:9201,http://127.0.0.1:9202,http://127.0.0.1:9203"
    assert PlatformSettings(elasticsearch_url=listed).elasticsearch_url == joined
    assert check_elasticsearch_url(listed) == joined
    assert elasticsearch_client_kwargs(listed)["hosts"] == joined.split(",")
    assert elasticsearch_client_kwargs("http://es:9200")["hosts"] == ["http://es:9200"]
    assert elasticsearch_client_kwargs(None)["hosts"] == ["http://127.0.0.1:9200"]
    with pytest.raises(ConfigurationError, match="has an empty entry"):
        check_elasticsearch_url("http://es1:9200,,http://es2:9200")
    with pytest.raises(ConfigurationError, match="host 2 of 2 is not an http"):
        PlatformSettings(elasticsearch_url="http://es1:9200,redis://es2:6379")
    # Other URLs stay single.
    with pytest.raises(ConfigurationError, match="DEMO_SITE_URL"):
        PlatformSettings(demo_site_url="http://a:1,http://b:2")


def test_redacted_masks_every_password_of_a_host_list() -> None:
    secret = "s3cr,t@x"  # a comma or an @ inside the password is masked too
    listed = f"http://a:9200,http://u:{secret}@b:9200/,https://v:pw@c:9200"
    assert redacted(listed) == "http://a:9200,http://u:****@b:9200/,https://v:****@c:9200"
    with pytest.raises(ConfigurationError) as raised:
        check_elasticsearch_url(f"http://u:{secret}@b:9200,http://u:{secret}@c:x")
    assert "s3cr" not in raised.value.message and "t@x" not in raised.value.message
