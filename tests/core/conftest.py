"""Fixtures of the core tests."""

from __future__ import annotations

import pytest

from harness.redis_server import RedisServer
from tests.core.redis_target import Target


@pytest.fixture(params=["single", "cluster"])
def target(request: pytest.FixtureRequest, redis_server: RedisServer) -> Target:
    if request.param == "single":
        return Target(redis_server.url, cluster=False)
    return Target(request.getfixturevalue("redis_cluster").url, cluster=True)
