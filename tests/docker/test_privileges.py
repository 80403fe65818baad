"""Production privileges in docker/compose.yaml: each service holds the secrets it uses and
no more, no secret is in a command line, the Prefect API asks for credentials, the search
API reads Elasticsearch as a read-only user and kibana-setup is no superuser."""

from __future__ import annotations

from typing import Any

import pytest

from crawlers.profiles import load_profiles
from tests.docker.support import (
    REPO_ROOT,
    example_environment,
    interpolate_document,
    load_compose,
    load_module,
    strings_in,
)

# The secrets a service may hold, by the variable that carries each into a container.
SECRETS = {
    "REDIS_URL",  # the Redis password, inside the URL
    "ELASTICSEARCH_PASSWORD",
    "ELASTICSEARCH_API_KEY",
    "PROXY_LIST",
    "FACEBOOK_SESSION_COOKIES",
    "SLACK_WEBHOOK_URL",
    "OPENAI_API_KEY",
    "PREFECT_API_AUTH_STRING",
}
# What every site's worker holds: the frontier and the writer. No alerts, no LLM, no
# Prefect; a fetch secret only as its profile declares (test_each_site_worker_...).
CRAWL = {"REDIS_URL", "ELASTICSEARCH_PASSWORD", "ELASTICSEARCH_API_KEY"}
ALLOWED = {
    # The demo shop needs no proxy and no session: nothing that fetches for another site.
    "worker-demo": CRAWL,
    # The flows run every step: all of the platform's secrets (behind the API's auth).
    "prefect-worker": SECRETS,
    # Searches: the read-only user and the embedder's key.
    "search-api": {"ELASTICSEARCH_PASSWORD", "OPENAI_API_KEY"},
    "demo-site": set(),
}


@pytest.fixture(scope="module")
def env() -> dict[str, str]:
    return example_environment()


@pytest.fixture(scope="module")
def resolved(env: dict[str, str]) -> dict[str, Any]:
    return dict(interpolate_document(load_compose(), env))


def secret_values(env: dict[str, str]) -> dict[str, str]:
    init_env = load_module(REPO_ROOT / "docker" / "init_env.py", "init_env")
    return {name: env[name] for name in init_env.SECRETS}


def test_no_secret_is_in_a_command_line(resolved: dict[str, Any], env: dict[str, str]) -> None:
    # argv is readable by every user of the host (ps) and in `docker inspect`.
    for name, service in resolved["services"].items():
        argv = [*strings_in(service.get("command")), *strings_in(service.get("entrypoint"))]
        argv += strings_in((service.get("healthcheck") or {}).get("test"))
        for secret, value in secret_values(env).items():
            assert not any(value in arg for arg in argv), f"{secret} in the argv of {name}"


def test_each_service_holds_only_the_secrets_it_uses(resolved: dict[str, Any]) -> None:
    services = resolved["services"]
    for name, allowed in ALLOWED.items():
        held = SECRETS & set(services[name].get("environment") or {})
        assert held == allowed, name
    every_site = [name for name in services if name.startswith("worker-")]
    assert len(every_site) > 1
    for name in every_site:
        held = SECRETS & set(services[name]["environment"])
        assert held >= CRAWL, name
        assert held <= SECRETS - {"SLACK_WEBHOOK_URL", "OPENAI_API_KEY", "PREFECT_API_AUTH_STRING"}


def test_each_site_worker_holds_the_fetch_secrets_its_profile_declares(
    resolved: dict[str, Any],
) -> None:
    """A site's proxies and session reach only that site's worker: PROXY_LIST (and the file
    naming proxies) with needs_proxies = true, the variables of its ``secrets``; the flows'
    worker, which fetches every site's gate samples, holds them all."""
    services = resolved["services"]
    holders: dict[str, set[str]] = {}
    for profile in load_profiles():
        environment = set(services[f"worker-{profile.site}"]["environment"])
        fetch = environment - CRAWL - set(resolved["x-platform-env"]) - {"ELASTICSEARCH_USERNAME"}
        proxies = {"PROXY_LIST", "PROXY_LIST_FILE"} if profile.needs_proxies else set()
        assert fetch == proxies | set(profile.secrets), profile.site
        for name in fetch:
            holders.setdefault(name, set()).add(f"worker-{profile.site}")
    # Facebook's session: its worker and the flows', nobody else (the g2 or demo worker).
    everyone = {name for name, service in services.items() if service.get("environment")}
    with_session = {n for n in everyone if "FACEBOOK_SESSION_COOKIES" in services[n]["environment"]}
    assert with_session == {"worker-facebook_marketplace", "prefect-worker"}
    assert holders["FACEBOOK_SESSION_COOKIES"] == {"worker-facebook_marketplace"}
    assert {"worker-g2", "worker-idealista"} <= holders["PROXY_LIST"]
    assert "worker-demo" not in holders["PROXY_LIST"]
    assert set(holders) <= set(services["prefect-worker"]["environment"])


def test_the_stores_and_kibana_hold_no_platform_secret(
    resolved: dict[str, Any], env: dict[str, str]
) -> None:
    platform = ("ELASTICSEARCH_PASSWORD", "SEARCH_ES_PASSWORD", "PREFECT_API_PASSWORD")
    for name in ("redis", "elasticsearch", "kibana", "postgres", "prefect-server"):
        values = set((resolved["services"][name].get("environment") or {}).values())
        held = [secret for secret in platform if any(env[secret] in str(v) for v in values)]
        # The Prefect server checks the API's credentials: it holds them, nothing else.
        assert held == (["PREFECT_API_PASSWORD"] if name == "prefect-server" else []), name


def test_the_search_api_reads_as_a_read_only_user(
    resolved: dict[str, Any], env: dict[str, str]
) -> None:
    search = resolved["services"]["search-api"]["environment"]
    writer = resolved["services"]["prefect-worker"]["environment"]
    assert search["ELASTICSEARCH_USERNAME"] == env["SEARCH_ES_USERNAME"] == "search"
    assert search["ELASTICSEARCH_PASSWORD"] == env["SEARCH_ES_PASSWORD"]
    assert search["ELASTICSEARCH_PASSWORD"] != writer["ELASTICSEARCH_PASSWORD"]
    setup = resolved["services"]["es-setup"]["environment"]
    assert setup["SEARCH_ES_USERNAME"] == "search"
    assert setup["SEARCH_ES_PASSWORD"] == env["SEARCH_ES_PASSWORD"]


def test_the_prefect_api_requires_the_credentials_the_worker_presents(
    resolved: dict[str, Any], env: dict[str, str]
) -> None:
    server = resolved["services"]["prefect-server"]["environment"]
    worker = resolved["services"]["prefect-worker"]["environment"]
    expected = f"prefect:{env['PREFECT_API_PASSWORD']}"
    assert server["PREFECT_SERVER_API_AUTH_STRING"] == expected
    assert worker["PREFECT_API_AUTH_STRING"] == expected
    # Its health probe stays unauthenticated (Prefect exempts GET /api/health).
    assert resolved["services"]["prefect-server"]["healthcheck"]["test"][-1].endswith("/api/health")


def test_kibana_setup_has_its_own_user_not_the_superuser(
    resolved: dict[str, Any], env: dict[str, str]
) -> None:
    kibana_setup = resolved["services"]["kibana-setup"]["environment"]
    assert kibana_setup["KIBANA_USERNAME"] == "kibana_setup" != "elastic"
    assert kibana_setup["KIBANA_PASSWORD"] == env["KIBANA_SETUP_PASSWORD"]
    assert env["ELASTIC_PASSWORD"] not in kibana_setup.values()
    # Only es-setup (which creates the users) and Elasticsearch itself hold the superuser's.
    holders = {
        name
        for name, service in resolved["services"].items()
        if env["ELASTIC_PASSWORD"] in (service.get("environment") or {}).values()
    }
    assert holders == {"elasticsearch", "es-setup"}
