"""Where a test's Redis state lives: one Redis, or a Redis Cluster (``REDIS_CLUSTER``).

The ``target`` fixture (tests/core/conftest.py) is parametrized over both.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    url: str
    cluster: bool
