"""The platform's configuration: one table of environment variables, one object reading it.

Every variable is optional. Unset means the embedded default (a local service the
harness starts, or the feature switched off), never a crash at import. Secrets are
``SecretStr`` so they print as ``**********`` in logs, reprs and exceptions.

``ENVIRONMENT`` is the one table of every variable the platform reads: what it means and,
for the crawl, which Scrapy setting it becomes. Flows, the search API and the CLIs read
``get_settings()``; a crawl reads Scrapy settings, which ``crawlers.runtime.environment`` fills
from the same table and the same parsing (``crawl_values``). docs/configuration.md
renders the table.

A malformed value (a REDIS_URL that is no Redis URL, a PROXY_LIST_FILE that does not
exist) raises ``ConfigurationError``: one line naming the variable and the fix, exit
status 2, no traceback (``OperatorError``, which the CLIs raise for their own mistakes).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from core.config_values import (
    CHROMIUM_CANDIDATES,
    HOST_PATTERN,
    HTTP_SCHEMES,
    PROXY_FORM,
    PROXY_SCHEMES,
    REDIS_SCHEMES,
    check_elasticsearch_url,
    check_http_url,
    check_proxy_url,
    check_redis_url,
    check_url,
    elasticsearch_client_kwargs,
    find_chromium,
    read_proxy_file,
    redacted,
    secret_value,
    settings_elasticsearch_kwargs,
    split_hosts,
)
from core.errors import EXIT_USAGE, ConfigurationError, OperatorError

# Importable from here as well: the value checks and the errors (core.config_values,
# core.errors) that this module applies.
__all__ = [
    "CHROMIUM_CANDIDATES",
    "EXIT_USAGE",
    "HOST_PATTERN",
    "HTTP_SCHEMES",
    "PROXY_FORM",
    "PROXY_SCHEMES",
    "REDIS_SCHEMES",
    "ConfigurationError",
    "OperatorError",
    "check_url",
    "redacted",
    "secret_value",
    "settings_elasticsearch_kwargs",
    "split_hosts",
]

REPO_ROOT = Path(__file__).resolve().parent.parent

# The two defaults every part of the platform shares (services, flows and the crawl).
DEFAULT_RUN_DIR = REPO_ROOT / ".run"
DEFAULT_DEMO_SITE_URL = "http://127.0.0.1:8000"


def site_profiles_dir(default: Path) -> Path:
    """``SITE_PROFILES_DIR`` (site profiles kept outside the repository; tests), else
    ``default``. Read on its own, as crawls and CLIs load profiles before any settings."""
    configured = os.environ.get("SITE_PROFILES_DIR", "").strip()
    return Path(configured).resolve() if configured else default


def fingerprint_sites_dir(default: Path) -> Path:
    """``FINGERPRINT_SITES_DIR`` (the structure gate's per-site fixtures and baselines),
    else ``default``: what ``PlatformSettings.fingerprint_sites_dir`` reads, for the
    commands under crawlers/ (``python -m crawlers.scaffold``), which read no settings."""
    configured = os.environ.get("FINGERPRINT_SITES_DIR", "").strip()
    return Path(configured).resolve() if configured else default


def _split_list(value: object) -> object:
    """Accept ``a,b`` or one-per-line lists from the environment."""
    if isinstance(value, str):
        return [part.strip() for part in value.replace("\n", ",").split(",") if part.strip()]
    return value


class PlatformSettings(BaseSettings):
    """Environment-driven settings of flows, the search API and the CLIs (see ENVIRONMENT)."""

    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    # Frontier. None: `scrapy crawl` uses Scrapy's own in-memory scheduler.
    redis_url: str | None = None
    # REDIS_URL is a seed node of a Redis Cluster (core.redis_client picks the client).
    redis_cluster: bool = False

    # Search store. None: local mode starts the embedded node (harness.es_node).
    elasticsearch_url: str | None = None
    elasticsearch_username: str | None = None
    elasticsearch_password: SecretStr | None = None
    elasticsearch_api_key: SecretStr | None = None

    prefect_api_url: str | None = None
    # The search API the daily health check probes (e.g. http://search-api:8088).
    search_api_url: str | None = None

    slack_webhook_url: SecretStr | None = None

    # A logged-in facebook.com session for the facebook_marketplace spider: a Cookie header
    # ("c_user=...; xs=...") or JSON (a name -> value object, or a browser export list).
    facebook_session_cookies: SecretStr | None = None

    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None
    # Offline (no OpenAI endpoint): the multilingual model, as the production sites are
    # Spanish, Portuguese, Italian and French; all-MiniLM-L6-v2 is the English-only one.
    embedding_model: str = "universal-sentence-encoder-multilingual-3"
    # Retries of one embeddings request (429/5xx/timeouts), with the SDK's backoff: the
    # one retry layer of that hop.
    embedding_max_retries: int = Field(default=6, ge=0, le=20)
    # The chat model that suggests replacement rules when a site's extraction breaks
    # (fingerprints.repair), on the same OpenAI-compatible endpoint.
    chat_model: str = "gpt-4o-mini"

    # Proxies: a comma/newline separated list, and/or a file with one proxy per line.
    proxy_list: Annotated[list[str], NoDecode] = Field(default_factory=list, repr=False)
    proxy_list_file: Path | None = Field(default=None, repr=False)

    chromium_path: str | None = None

    # Local state of the harness: PIDs, logs, data directories.
    platform_run_dir: Path = DEFAULT_RUN_DIR

    # Where the demo site is served when the harness is not told otherwise.
    demo_site_url: str = DEFAULT_DEMO_SITE_URL

    # The scrape flow's structure gate: the per-site baselines it reads and where a
    # baseline accepted in the Prefect UI is written (None: fingerprints/sites).
    fingerprint_sites_dir: Path | None = None
    # The site profiles (None: crawlers/profiles); read directly by site_profiles_dir().
    site_profiles_dir: Path | None = None
    # Seconds a run whose gate failed closed with a proposed baseline waits, suspended,
    # for an operator's accept/reject in the Prefect UI; 0: no approval step, it fails
    # at once. Unanswered in time: it fails (closed).
    gate_approval_timeout: int = Field(default=0, ge=0)
    # A job whose ERROR log lines exceed this many per 1,000 pages fetched (and at least
    # one) completes with a warning, in its report and Slack, not plain green.
    job_errors_warn_per_1000_pages: float = Field(default=10.0, ge=0)

    # Kibana as operators' browsers reach it (e.g. https://kibana.example.com): the run
    # report links the dashboard filtered to the job. None: no Kibana links.
    kibana_public_url: str | None = None
    # Seconds between the INFO progress lines of long steps (wait-for-drain, llm-process);
    # the Prefect progress artifacts update on every poll regardless.
    progress_log_interval: float = Field(default=30.0, gt=0)

    _split_proxies = field_validator("proxy_list", mode="before")(_split_list)

    @field_validator("proxy_list")
    @classmethod
    def _proxies(cls, value: list[str]) -> list[str]:
        return [check_proxy_url(entry) for entry in value]

    # A malformed URL stops the process with one line (ConfigurationError), not at first use.
    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, value: str | None) -> str | None:
        return check_redis_url(value)

    @field_validator("prefect_api_url", "search_api_url", "demo_site_url", "kibana_public_url")
    @classmethod
    def _http_url(cls, value: str | None, info: Any) -> str | None:
        return check_http_url(value, str(info.field_name).upper())

    @field_validator("elasticsearch_url")
    @classmethod
    def _elasticsearch_url(cls, value: str | None) -> str | None:
        return check_elasticsearch_url(value)

    @field_validator("proxy_list_file")
    @classmethod
    def _proxy_file(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            read_proxy_file(value)  # raises the ConfigurationError naming the variable
        return value

    def proxies(self) -> list[str]:
        """The configured proxies: the inline list followed by the file's entries."""
        proxies = list(self.proxy_list)
        if self.proxy_list_file is not None:
            proxies += read_proxy_file(self.proxy_list_file)
        return proxies

    def chromium_executable(self) -> str | None:
        """Chromium for Playwright: the configured path, else Debian's package."""
        return find_chromium(self.chromium_path)

    def local_stack_state(self) -> dict[str, str]:
        """What ``make prefect-up`` / ``make demo`` wrote about the local stack it runs
        (``<PLATFORM_RUN_DIR>/stack/stack.json``: its services' URLs); {} when none is up."""
        try:
            return dict(json.loads(self.local_stack_state_path().read_text()))
        except (OSError, ValueError, TypeError):
            return {}

    def local_stack_state_path(self) -> Path:
        return self.platform_run_dir / "stack" / "stack.json"

    def elasticsearch_client_kwargs(self) -> dict[str, Any]:
        """Arguments for ``elasticsearch.Elasticsearch``."""
        return elasticsearch_client_kwargs(
            self.elasticsearch_url,
            username=self.elasticsearch_username,
            password=self.elasticsearch_password,
            api_key=self.elasticsearch_api_key,
        )


class CrawlEnvironment(PlatformSettings):
    """PlatformSettings plus the variables only a crawl worker reads.

    SCRAPE_JOB_ID is set per run by the scrape flow for the workers it launches, never
    for the whole stack, so it is not one of PlatformSettings' (stack-wide) fields.
    """

    scrape_job_id: str | None = None
    # Without Redis: where the store's file spill waits for Elasticsearch (None: under
    # PLATFORM_RUN_DIR). Checked writable by the crawl at start (crawlers.pipelines.store).
    store_spill_dir: Path | None = None


# -- the table --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variable:
    """One environment variable: its meaning and the Scrapy setting it becomes.

    ``setting`` None: read by flows/the search API/CLIs only, not by a crawl. ``key``: the
    value goes under this key of a dict setting (merged into the setting's default).
    ``value``: how the parsed environment becomes the setting's value (default: the
    variable's own parsed field; several variables may feed one setting).
    """

    name: str
    setting: str | None
    meaning: str
    default: str = "unset"
    secret: bool = False
    key: str | None = None
    value: Callable[[CrawlEnvironment], object] | None = None

    def crawl_value(self, environment: CrawlEnvironment) -> object:
        if self.value is not None:
            return self.value(environment)
        return getattr(environment, self.name.lower())


ENVIRONMENT: tuple[Variable, ...] = (
    Variable(
        "REDIS_URL",
        "REDIS_URL",
        "the frontier (scheduler, dupefilter, worker registry), dedup state, job stats and "
        "the store's spill",
        "no frontier: Scrapy's own scheduler; dedup off",
    ),
    Variable(
        "REDIS_CLUSTER",
        "REDIS_CLUSTER",
        "1: REDIS_URL is a seed node of a Redis Cluster; every Redis client is redis-py's "
        'cluster client (docs/frontier.md, "Redis Cluster")',
        "0: one Redis",
    ),
    Variable(
        "ELASTICSEARCH_URL",
        "ELASTICSEARCH_URL",
        "the search store (items, jobs): one URL, or a cluster's nodes comma-separated",
        "store pipeline off; local mode starts the embedded node",
    ),
    Variable("ELASTICSEARCH_USERNAME", "ELASTICSEARCH_USERNAME", "basic auth user of the store"),
    Variable(
        "ELASTICSEARCH_PASSWORD",
        "ELASTICSEARCH_PASSWORD",
        "basic auth password of the store",
        secret=True,
    ),
    Variable(
        "ELASTICSEARCH_API_KEY",
        "ELASTICSEARCH_API_KEY",
        "API key of the store (instead of user/password)",
        secret=True,
    ),
    Variable(
        "PLATFORM_RUN_DIR",
        "PLATFORM_RUN_DIR",
        "PIDs, logs and data of locally started services; the store's file spill",
        "<repo>/.run",
        value=lambda environment: str(environment.platform_run_dir),
    ),
    Variable(
        "STORE_SPILL_DIR",
        "STORE_SPILL_DIR",
        "without Redis: the directory of the store's spill files (`<site>.jsonl`), where "
        "items Elasticsearch does not take wait; checked writable when a crawl starts",
        "<PLATFORM_RUN_DIR>/spill",
        value=lambda environment: str(environment.store_spill_dir),
    ),
    Variable(
        "SCRAPE_JOB_ID",
        "JOB_ID",
        "the job a worker works for (set per run by the scrape flow, never globally)",
        "a new job id per crawl",
    ),
    Variable(
        "DEMO_SITE_URL",
        "DEMO_SITE_URL",
        "where the demo spider crawls without `-a base_url=`",
        DEFAULT_DEMO_SITE_URL,
    ),
    Variable(
        "FACEBOOK_SESSION_COOKIES",
        "FACEBOOK_SESSION_COOKIES",
        "a logged-in facebook.com session (Cookie header or JSON) for facebook_marketplace",
        "facebook_marketplace refuses to start",
        secret=True,
    ),
    Variable(
        "PROXY_LIST",
        "ROTATING_PROXY_LIST",
        "proxies for every site, comma or newline separated (then PROXY_LIST_FILE's)",
        "direct connections",
        value=lambda environment: environment.proxies(),
    ),
    Variable(
        "PROXY_LIST_FILE",
        "ROTATING_PROXY_LIST",
        "a file with one proxy per line, added to PROXY_LIST",
        "direct connections",
        value=lambda environment: environment.proxies(),
    ),
    Variable(
        "CHROMIUM_PATH",
        "PLAYWRIGHT_LAUNCH_OPTIONS",
        "the Chromium binary for Playwright (its launch options' executable_path)",
        "Debian's /usr/bin/chromium",
        key="executable_path",
    ),
    Variable("PREFECT_API_URL", None, "the Prefect server", "local mode starts one"),
    Variable("SEARCH_API_URL", None, "the search API the daily health check probes"),
    Variable(
        "SLACK_WEBHOOK_URL", None, "Slack incoming webhook for alerts", "no Slack", secret=True
    ),
    Variable(
        "OPENAI_API_KEY", None, "embeddings through an OpenAI API", "offline model", secret=True
    ),
    Variable("OPENAI_BASE_URL", None, "an OpenAI-compatible endpoint", "offline model"),
    Variable(
        "EMBEDDING_MODEL",
        None,
        "the embedding model",
        "universal-sentence-encoder-multilingual-3 (offline); text-embedding-3-small with an "
        "endpoint",
    ),
    Variable(
        "EMBEDDING_MAX_RETRIES",
        None,
        "retries of one embeddings request (429/5xx/timeouts) with backoff, then the step fails",
        "6",
    ),
    Variable(
        "CHAT_MODEL",
        None,
        "the chat model suggesting repairs of broken selectors (needs OPENAI_BASE_URL or "
        "OPENAI_API_KEY)",
        "gpt-4o-mini",
    ),
    Variable(
        "FINGERPRINT_SITES_DIR",
        None,
        "the per-site baselines the scrape flow's gate reads and approvals write",
        "fingerprints/sites",
    ),
    Variable(
        "SITE_PROFILES_DIR",
        None,
        "the site profiles (`<dir>/<site>.toml`) every crawl, flow and CLI reads, e.g. "
        "profiles kept outside the repository",
        "crawlers/profiles",
    ),
    Variable(
        "GATE_APPROVAL_TIMEOUT",
        None,
        "seconds a run whose gate failed closed waits, suspended, for accept/reject in the "
        "Prefect UI; unanswered: it fails",
        "0 (no approval step)",
    ),
    Variable(
        "JOB_ERRORS_WARN_PER_1000_PAGES",
        None,
        "ERROR log lines per 1,000 pages fetched above which a completed job ends "
        "CompletedWithWarnings (report and Slack say so)",
        "10",
    ),
    Variable(
        "KIBANA_PUBLIC_URL",
        None,
        "Kibana as browsers reach it: the run report links the dashboard filtered to the job",
        "no Kibana links",
    ),
    Variable(
        "PROGRESS_LOG_INTERVAL",
        None,
        "seconds between the INFO progress lines of wait-for-drain and llm-process",
        "30",
    ),
)


def crawl_environment(environ: Mapping[str, str] | None = None) -> CrawlEnvironment:
    """The crawl's variables, parsed: from ``environ`` if given, else the process's."""
    if environ is None:
        return CrawlEnvironment()
    names = {variable.name for variable in ENVIRONMENT}
    given = {key.upper(): value for key, value in environ.items()}
    # Exactly ``environ``, nothing else: the process's variables (a PLATFORM_RUN_DIR of
    # the shell) are no source here (pydantic-settings reads them even in model_validate).
    values: dict[str, Any] = {name.lower(): value for name, value in given.items() if name in names}
    return _GivenEnvironment(**values)


class _GivenEnvironment(CrawlEnvironment):
    """A crawl environment of the values given alone (``crawl_environment(environ)``)."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)


def crawl_values(environment: CrawlEnvironment) -> dict[str, tuple[object, str | None]]:
    """Scrapy setting -> (value, dict key or None), for each variable that is set."""
    values: dict[str, tuple[object, str | None]] = {}
    for variable in ENVIRONMENT:
        if variable.setting is None or variable.name.lower() not in environment.model_fields_set:
            continue
        values[variable.setting] = (variable.crawl_value(environment), variable.key)
    return values


@lru_cache(maxsize=1)
def get_settings() -> PlatformSettings:
    """The process-wide settings of flows, the search API and CLIs (read once)."""
    return PlatformSettings()
