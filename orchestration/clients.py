"""The flows' connections, from the environment in one place: the Redis and Elasticsearch
clients every step uses, and what local ``scrapy crawl`` workers are told.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from elasticsearch import Elasticsearch
from redis.backoff import ExponentialWithJitterBackoff
from redis.retry import Retry

from core.config import PlatformSettings, get_settings
from core.keys import REDIS_ERRORS
from core.redis_client import Client, connect
from orchestration.steps import StepError

# One retry layer per hop: the clients retry transient connection errors and timeouts,
# bounded and with backoff; a call that still fails fails its step (which alerts). The
# tasks themselves are not retried by Prefect (that would stack a second layer); a
# failed run is resumed with Prefect's "Retry" instead.
REDIS_RETRIES = 3
ES_RETRIES = 3


def redis_client() -> Client:
    settings = get_settings()
    url = settings.redis_url
    if not url:
        raise StepError("REDIS_URL is not set: the scrape flow needs the Redis frontier")
    try:
        return connect(
            url,
            cluster=settings.redis_cluster,
            socket_timeout=10,
            socket_connect_timeout=5,
            retry=Retry(ExponentialWithJitterBackoff(base=0.5, cap=4.0), REDIS_RETRIES),
        )
    except REDIS_ERRORS as exc:
        # Only a cluster client connects when built (it reads the slot map).
        raise StepError(f"Redis Cluster unreachable ({type(exc).__name__}: {exc})") from None


def es_client() -> Elasticsearch:
    return Elasticsearch(
        **get_settings().elasticsearch_client_kwargs(),
        request_timeout=30,
        max_retries=ES_RETRIES,
        retry_on_timeout=True,
        retry_backoff_base=0.5,
        retry_backoff_cap=4.0,
    )


def crawl_settings(config: PlatformSettings | None = None) -> dict[str, str]:
    """What local ``scrapy crawl`` workers are told as ``-s NAME=value``: the connections
    and run directory, never a secret (argv is visible in ``ps``). A URL embedding a
    password stays in the workers' environment, like every other secret."""
    config = config or get_settings()
    settings = {
        "REDIS_URL": config.redis_url,
        "REDIS_CLUSTER": "1" if config.redis_cluster else None,
        "ELASTICSEARCH_URL": config.elasticsearch_url,
        "PLATFORM_RUN_DIR": str(config.platform_run_dir),
        "DEMO_SITE_URL": config.demo_site_url,
    }
    return {
        name: value
        for name, value in settings.items()
        if value and urlsplit(value).password is None
    }
