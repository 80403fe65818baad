"""Fixtures of the store tests: a throwaway site, a clean Redis, demo products."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from elasticsearch import Elasticsearch

from crawlers.items import DemoProduct
from harness.redis_server import RedisServer
from standins.demo_site.catalog import build_catalog
from tests.core.store.support import BASE, clean_site


@pytest.fixture
def site(es: Elasticsearch) -> Iterator[str]:
    name = f"t{uuid.uuid4().hex[:8]}"
    yield name
    clean_site(es, name)


@pytest.fixture
def server(redis_server: RedisServer) -> Iterator[redis.Redis]:
    client = redis_server.client()
    yield client
    client.flushdb()


@pytest.fixture(scope="module")
def products() -> list[DemoProduct]:
    return [DemoProduct(**p.to_dict(BASE)) for p in build_catalog(n_products=1200).products]
