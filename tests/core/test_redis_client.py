"""``core.redis_client``: one Redis or a Redis Cluster, and a mismatch named with its fix."""

from __future__ import annotations

import asyncio

import pytest
import redis
import redis.asyncio
import redis.cluster

from core.redis_client import (
    RedisModeError,
    check_mode,
    connect,
    connect_async,
    is_cluster,
    ping_all,
)
from harness.base import free_port
from harness.redis_server import RedisCluster, RedisServer


def test_the_cluster_flag_picks_the_client(
    redis_server: RedisServer, redis_cluster: RedisCluster
) -> None:
    single = connect(redis_server.url, socket_timeout=5)
    assert type(single) is redis.Redis and not is_cluster(single)
    check_mode(single, "single")  # a plain Redis with a single-Redis client: fine
    # The single-Redis REDIS_PARAMS are taken as they are (db 0 included).
    cluster = connect(redis_cluster.url, cluster=True, socket_timeout=5, db=0)
    assert isinstance(cluster, redis.cluster.RedisCluster) and is_cluster(cluster)
    assert ping_all(cluster) and len(cluster.get_primaries()) == 3
    check_mode(cluster, "cluster")
    single.close()
    cluster.close()


def test_a_single_redis_client_on_a_cluster_node_is_an_operator_error(
    redis_cluster: RedisCluster,
) -> None:
    client = connect(redis_cluster.url)
    with pytest.raises(RedisModeError) as info:
        check_mode(client, "redis://127.0.0.1:1")
    assert info.value.message == (
        "Redis at redis://127.0.0.1:1 is a Redis Cluster node but REDIS_CLUSTER is not set "
        "(its replies would be MOVED/CROSSSLOT errors): set REDIS_CLUSTER=1 (Scrapy setting "
        "REDIS_CLUSTER = True) for a Redis Cluster"
    )
    client.close()


def test_a_cluster_client_on_a_plain_redis_is_an_operator_error(
    redis_server: RedisServer,
) -> None:
    expected = (
        f"REDIS_CLUSTER is set but Redis at 127.0.0.1:{redis_server.port} is not in cluster "
        "mode: unset REDIS_CLUSTER, or point REDIS_URL at a node of the Redis Cluster "
        "(cluster mode)"
    )
    with pytest.raises(RedisModeError) as info:
        connect(redis_server.url, cluster=True)
    assert info.value.message == expected

    async def first_command() -> None:
        client = connect_async(redis_server.url, cluster=True)
        try:
            await client.ping()
        finally:
            await client.aclose()

    with pytest.raises(RedisModeError) as info:
        asyncio.run(first_command())
    assert info.value.message == expected


def test_an_unreachable_cluster_is_a_connection_error_and_db_must_be_0() -> None:
    closed = f"redis://127.0.0.1:{free_port()}/0"
    with pytest.raises(redis.ConnectionError):
        connect(closed, cluster=True, socket_connect_timeout=1)

    async def first_command() -> None:
        client = connect_async(closed, cluster=True, params={"socket_connect_timeout": 1})
        try:
            await client.ping()
        finally:
            await client.aclose()

    with pytest.raises(redis.ConnectionError):
        asyncio.run(first_command())
    with pytest.raises(RedisModeError, match="names database 2, but a Redis Cluster has only"):
        connect(closed.replace("/0", "/2"), cluster=True)
