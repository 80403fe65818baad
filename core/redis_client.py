"""Every Redis client of the platform: one Redis, or a Redis Cluster (``REDIS_CLUSTER``).

``connect`` (sync) and ``connect_async`` (asyncio) are the one place a client is built,
and ``SOCKET_OPTIONS`` the one place its socket timeouts are chosen (a crawl's
``REDIS_PARAMS`` may override them). With ``cluster=True`` they build redis-py's cluster
client from ``url``, a seed node: it discovers the other masters and routes each command
by its key's slot. Every key of a site carries the hash tag ``{<site>}``
(``core.keys``), so each Lua script, transaction and multi-key command of a site touches
one slot, on one master, as on a single Redis.

A wrong choice is an operator's mistake, named with its fix (``check_mode``): a single-
Redis client on a cluster node would get MOVED/CROSSSLOT replies at random; a cluster
client on a plain Redis cannot start.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisClusterException

from core.config import OperatorError, redacted

Client = redis.Redis | redis.cluster.RedisCluster
AsyncClient = redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster

SET_CLUSTER = "set REDIS_CLUSTER=1 (Scrapy setting REDIS_CLUSTER = True) for a Redis Cluster"
UNSET_CLUSTER = (
    "unset REDIS_CLUSTER, or point REDIS_URL at a node of the Redis Cluster (cluster mode)"
)
# Short timeouts: a hung Redis must not freeze a worker's reactor for long; its callers
# ride out longer outages (local buffers, retries with backoff).
SOCKET_OPTIONS: dict[str, float] = {
    "socket_timeout": 5,
    "socket_connect_timeout": 2,
    "health_check_interval": 15,
}
# Per-node connection cap of the asyncio cluster client: it does not wait for a free
# connection (redis-py raises MaxConnectionsError, a ConnectionError callers retry), so it
# is far above what a worker keeps in flight on the one master of its site.
CLUSTER_MAX_CONNECTIONS = 128
# Keyword arguments of a single-Redis client that a cluster client has no use for.
_SINGLE_ONLY = ("db", "connection_pool", "single_connection_client")


class RedisModeError(OperatorError):
    """REDIS_CLUSTER does not match the server REDIS_URL names."""


def connect(url: str, *, cluster: bool = False, **kwargs: Any) -> Client:
    """A sync client: ``redis.Redis`` (lazy: connects on first command), or with
    ``cluster`` a ``redis.cluster.RedisCluster``, which reads the cluster's slot map at
    once: an unreachable cluster raises ``redis.ConnectionError`` here."""
    if not cluster:
        return redis.Redis.from_url(url, **kwargs)
    try:
        return redis.cluster.RedisCluster.from_url(url, **cluster_options(url, kwargs))
    except RedisClusterException as exc:
        raise cluster_error(url, exc) from exc


def socket_options(params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``SOCKET_OPTIONS``, with those of ``params`` (a crawl's ``REDIS_PARAMS``) over them."""
    options: dict[str, Any] = dict(SOCKET_OPTIONS)
    options.update({k: v for k, v in (params or {}).items() if k in options})
    return options


def connect_async(
    url: str,
    *,
    max_connections: int = 16,
    params: Mapping[str, Any] | None = None,
    cluster: bool = False,
) -> AsyncClient:
    """An asyncio client whose pool makes callers wait for a free connection (both kinds
    connect on first command).

    Hundreds of items in flight would otherwise exceed the default pool (100) and fail
    with "Too many connections"; a few connections pipelined by Redis are just as fast.
    ``params``: the crawl's ``REDIS_PARAMS``, of which the socket options apply. The
    client never retries: its caller is the one retry layer of the hop.
    """
    options = socket_options(params)
    if cluster:
        return _AsyncCluster.from_url(
            url,
            **cluster_options(
                url,
                {
                    "max_connections": max(max_connections, CLUSTER_MAX_CONNECTIONS),
                    "retry": Retry(NoBackoff(), 0),
                    **options,
                },
            ),
        )
    pool = redis.asyncio.BlockingConnectionPool.from_url(
        url,
        max_connections=max_connections,
        timeout=None,  # wait for a free connection: it is always handed back
        retry=Retry(NoBackoff(), 0),
        **options,
    )
    return redis.asyncio.Redis(connection_pool=pool)


def is_cluster(client: object) -> bool:
    """Whether ``client`` (sync or asyncio, or one of their pipelines) talks to a cluster."""
    return isinstance(
        client,
        redis.cluster.RedisCluster
        | redis.asyncio.cluster.RedisCluster
        | redis.asyncio.cluster.ClusterPipeline,
    )


def cluster_options(url: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` of a single-Redis client as a cluster client takes them."""
    db = kwargs.get("db") or redis.connection.parse_url(url).get("db") or 0
    if int(db) != 0:
        raise RedisModeError(
            f"REDIS_URL {redacted(url)} names database {db}, but a Redis Cluster has only "
            "database 0: end REDIS_URL with /0, or unset REDIS_CLUSTER"
        )
    return {key: value for key, value in kwargs.items() if key not in _SINGLE_ONLY}


def cluster_error(url: str, exc: RedisClusterException) -> BaseException:
    """What a cluster client's start-up failure means: the wrong mode (an operator's
    mistake), or no reachable node (a connection error, retried like any other)."""
    text = str(exc)
    if "Cluster mode is not enabled" in text:
        return RedisModeError(
            f"REDIS_CLUSTER is set but Redis at {_address(url)} is not in cluster mode: "
            f"{UNSET_CLUSTER}"
        )
    if "cannot be connected" in text:
        return redis.ConnectionError(f"Redis Cluster unreachable at {_address(url)}")
    if "not covered" in text:  # the cluster is forming, or a master is down
        return redis.ConnectionError(f"Redis Cluster at {_address(url)} not ready ({text})")
    return exc


def check_mode(client: Client, address: str | None = None) -> None:
    """Raise ``RedisModeError`` unless the server's mode matches the client's: a single-
    Redis client must not talk to a cluster node. (A cluster client on a plain Redis
    fails when it is built: ``connect``.) ``address``: how messages name the server
    (default: its host and port). Redis errors propagate."""
    if isinstance(client, redis.cluster.RedisCluster):
        return
    if address is None:
        options = client.connection_pool.connection_kwargs
        address = f"{options.get('host', 'localhost')}:{options.get('port', 6379)}"
    info = client.info("cluster")
    if int(info.get("cluster_enabled", 0)):
        raise RedisModeError(
            f"Redis at {address} is a Redis Cluster node but REDIS_CLUSTER is not "
            f"set (its replies would be MOVED/CROSSSLOT errors): {SET_CLUSTER}"
        )


def text(value: bytes | str) -> str:
    """A reply as text: the platform's clients answer bytes (``decode_responses`` off)."""
    return value.decode() if isinstance(value, bytes) else value


def ping_all(client: Client) -> bool:
    """PING every node (a cluster's masters), or the one Redis."""
    if isinstance(client, redis.cluster.RedisCluster):
        return bool(client.ping(target_nodes=redis.cluster.RedisCluster.ALL_NODES))
    return bool(client.ping())


def _address(url: str) -> str:
    connection = redis.connection.parse_url(url)
    return f"{connection.get('host', 'localhost')}:{connection.get('port', 6379)}"


class _AsyncCluster(redis.asyncio.cluster.RedisCluster):
    """The asyncio cluster client, whose lazy start-up failures read like the sync one's:
    no reachable node is a ``redis.ConnectionError`` (retried by callers), a plain Redis
    an operator's mistake."""

    async def initialize(self, *args: Any, **kwargs: Any) -> _AsyncCluster:
        try:
            await super().initialize(*args, **kwargs)
        except RedisClusterException as exc:
            seed = next(iter(self.nodes_manager.startup_nodes.values()), None)
            url = f"redis://{seed.host}:{seed.port}" if seed else "redis://?"
            raise cluster_error(url, exc) from None
        return self
