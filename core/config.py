"""The platform's configuration: one object, read from the environment.

Every variable is optional. Unset means the embedded default (a local service the
harness starts, or the feature switched off), never a crash at import. Secrets are
``SecretStr`` so they print as ``**********`` in logs, reprs and exceptions.
"""

from __future__ import annotations

import shutil
from functools import lru_cache
from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parent.parent

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")


def _split_list(value: object) -> object:
    """Accept ``a,b`` or one-per-line lists from the environment."""
    if isinstance(value, str):
        return [part.strip() for part in value.replace("\n", ",").split(",") if part.strip()]
    return value


class PlatformSettings(BaseSettings):
    """Environment-driven settings shared by crawlers, flows and services."""

    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    # Frontier. None: `scrapy crawl` uses Scrapy's own in-memory scheduler.
    redis_url: str | None = None

    # Search store. None: local mode starts the embedded node (services.es_node).
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
    embedding_model: str = "all-MiniLM-L6-v2"

    # Proxies: a comma/newline separated list, and/or a file with one proxy per line.
    proxy_list: Annotated[list[str], NoDecode] = Field(default_factory=list, repr=False)
    proxy_list_file: Path | None = Field(default=None, repr=False)

    chromium_path: str | None = None

    # Local state of the harness: PIDs, logs, data directories.
    platform_run_dir: Path = REPO_ROOT / ".run"

    # Where the demo site is served when the harness is not told otherwise.
    demo_site_url: str = "http://127.0.0.1:8000"

    _split_proxies = field_validator("proxy_list", mode="before")(_split_list)

    def proxies(self) -> list[str]:
        """The configured proxies: the inline list followed by the file's entries."""
        proxies = list(self.proxy_list)
        if self.proxy_list_file is not None:
            lines = self.proxy_list_file.read_text().splitlines()
            proxies += [line.strip() for line in lines if line.strip() and not line.startswith("#")]
        return proxies

    def chromium_executable(self) -> str | None:
        """Chromium for Playwright: the configured path, else Debian's package."""
        if self.chromium_path:
            return self.chromium_path
        for candidate in CHROMIUM_CANDIDATES:
            if Path(candidate).exists():
                return candidate
        return shutil.which("chromium")

    def elasticsearch_client_kwargs(self) -> dict[str, object]:
        """Arguments for ``elasticsearch.Elasticsearch``."""
        return elasticsearch_client_kwargs(
            self.elasticsearch_url,
            username=self.elasticsearch_username,
            password=self.elasticsearch_password,
            api_key=self.elasticsearch_api_key,
        )


def secret_value(value: object) -> str | None:
    """A secret as plain text, whether it came as ``SecretStr`` (environment) or ``str``
    (``scrapy crawl -s NAME=...``); None when unset. Unwrap only where the secret is used."""
    if value is None or value == "":
        return None
    if isinstance(value, SecretStr):
        return value.get_secret_value() or None
    return str(value)


def elasticsearch_client_kwargs(
    url: str | None,
    *,
    username: str | None = None,
    password: object = None,
    api_key: object = None,
) -> dict[str, object]:
    """Arguments for ``elasticsearch.Elasticsearch`` / ``AsyncElasticsearch``: the one place
    the store's credentials are unwrapped (API key first, else basic auth)."""
    kwargs: dict[str, object] = {"hosts": [url or "http://127.0.0.1:9200"]}
    key, secret = secret_value(api_key), secret_value(password)
    if key is not None:
        kwargs["api_key"] = key
    elif username and secret is not None:
        kwargs["basic_auth"] = (username, secret)
    return kwargs


@lru_cache(maxsize=1)
def get_settings() -> PlatformSettings:
    """The process-wide settings (read once; call ``get_settings.cache_clear()`` in tests)."""
    return PlatformSettings()
