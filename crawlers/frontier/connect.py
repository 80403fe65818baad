"""The first contact with Redis: a worker waits for it, a command checks it once.

A frontier worker may start before Redis does (compose starts always-on workers before
or during a Redis restart). ``wait_for_redis`` is the one place its crawl first connects:
the leasing scheduler awaits it in ``open``, before the pipelines, the worker extension or
the engine touch Redis. It pings with backoff (``FRONTIER_CONNECT_BACKOFF`` doubling up
to ``FRONTIER_CONNECT_BACKOFF_MAX``), one WARNING line per failed attempt, and returns
once Redis answers. An always-on worker waits as long as it takes; any other crawl gives
up after ``FRONTIER_CONNECT_TIMEOUT`` seconds. Giving up, and credentials Redis refuses,
are operator mistakes: one ERROR line in the crawl's log, exit status 2
(``core.config.OperatorError``).

Redis is named by ``redis_address`` (scheme, host and port): never a password.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
from scrapy import Spider
from scrapy.settings import BaseSettings
from scrapy.utils.asyncio import run_in_thread, sleep

from core.config import OperatorError
from core.keys import REDIS_ERRORS
from core.redis_client import Client, RedisModeError, check_mode, connect, ping_all

logger = logging.getLogger(__name__)

TRUE_WORDS = {"1", "true", "yes", "on"}
DEFAULT_PORT = 6379
CREDENTIALS_FIX = "set its password in REDIS_URL like redis://:password@host:6379/0"


def always_on(spider: Spider, default: bool) -> bool:
    """``-a always_on=true`` on the command line wins over ``FRONTIER_ALWAYS_ON``."""
    value: Any = getattr(spider, "always_on", None)
    if value is None:
        return default
    return str(value).lower() in TRUE_WORDS


def redis_address(url: str) -> str:
    """``redis://host:port`` (or ``unix:///path``) of a Redis URL: what messages name."""
    connection = redis.connection.parse_url(url)
    if "path" in connection:
        return f"unix://{connection['path']}"
    scheme = url.split("://", 1)[0]
    return (
        f"{scheme}://{connection.get('host', 'localhost')}:{connection.get('port', DEFAULT_PORT)}"
    )


def failure_reason(exc: BaseException) -> str:
    """The root cause's type (ConnectionRefusedError, gaierror, TimeoutError, ...): what
    went wrong on the network, without the client's wrapping."""
    cause: BaseException = exc
    while (inner := cause.__cause__ or cause.__context__) is not None:
        cause = inner
    return type(cause).__name__


def refused_credentials(address: str, exc: redis.AuthenticationError) -> str:
    return f"Redis at {address} refused the credentials ({type(exc).__name__}: {exc})"


def unreachable(address: str, exc: BaseException) -> str:
    return f"Redis at {address} unreachable ({failure_reason(exc)})"


def ping_checked(server: Client, address: str) -> None:
    """PING (every node of a cluster), then check REDIS_CLUSTER matches the server."""
    ping_all(server)
    check_mode(server, address)


def check_redis(server: Client, address: str, fix: str) -> None:
    """One ping for a command (the producer): a failure is one line, exit 2, with ``fix``."""
    try:
        ping_checked(server, address)
    except redis.AuthenticationError as exc:
        raise OperatorError(f"{refused_credentials(address, exc)}: {CREDENTIALS_FIX}") from None
    except REDIS_ERRORS as exc:
        raise OperatorError(f"{unreachable(address, exc)}: {fix}") from None


def connect_checked(url: str, fix: str, *, cluster: bool = False, **kwargs: Any) -> Client:
    """A client for a command, checked with one ping (``check_redis``): any failure, a
    cluster client's start included, is one line and exit 2, with ``fix``."""
    address = redis_address(url)
    try:
        server = connect(url, cluster=cluster, **kwargs)
    except REDIS_ERRORS as exc:
        raise OperatorError(f"{unreachable(address, exc)}: {fix}") from None
    check_redis(server, address, fix)
    return server


@dataclass(frozen=True)
class ConnectPolicy:
    """How long a worker waits for Redis at start: the FRONTIER_CONNECT_* settings."""

    backoff: float
    backoff_max: float
    # Seconds before giving up; None: wait as long as it takes (an always-on worker).
    timeout: float | None

    @classmethod
    def from_settings(cls, settings: BaseSettings, *, always_on: bool) -> ConnectPolicy:
        return cls(
            backoff=settings.getfloat("FRONTIER_CONNECT_BACKOFF"),
            backoff_max=settings.getfloat("FRONTIER_CONNECT_BACKOFF_MAX"),
            timeout=None if always_on else settings.getfloat("FRONTIER_CONNECT_TIMEOUT"),
        )

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1, 2, ...)."""
        return float(min(self.backoff_max, self.backoff * 2 ** (attempt - 1)))


async def wait_for_redis(
    connect: Callable[[], Client], address: str, policy: ConnectPolicy
) -> Client:
    """The client ``connect`` builds, once it answers a PING (a cluster client is built
    again until a node answers: it reads the slot map as it is built). Raise
    OperatorError when the policy gives up, Redis refuses the credentials, or
    REDIS_CLUSTER does not match the server (waiting would fix neither)."""
    started = time.monotonic()
    attempt = 0
    server: Client | None = None
    while True:
        attempt += 1
        try:
            # In a thread: the reactor stays responsive (a stop signal, the log) meanwhile.
            if server is None:
                server = await run_in_thread(connect)
            await run_in_thread(ping_checked, server, address)
        except redis.AuthenticationError as exc:
            message = f"{refused_credentials(address, exc)}: {CREDENTIALS_FIX}"
            logger.error("%s", message)
            raise OperatorError(message, reported=True) from None
        except RedisModeError as exc:
            logger.error("%s", exc.message)
            raise OperatorError(exc.message, reported=True) from None
        except REDIS_ERRORS as exc:
            waited = time.monotonic() - started
            delay = policy.delay(attempt)
            if policy.timeout is not None:
                if waited >= policy.timeout:
                    message = (
                        f"{unreachable(address, exc)} for {waited:.0f}s "
                        f"(FRONTIER_CONNECT_TIMEOUT={policy.timeout:g}): start Redis or fix "
                        "REDIS_URL; an always-on worker (-a always_on=true) waits as long as "
                        "it takes"
                    )
                    logger.error("%s", message)
                    raise OperatorError(message, reported=True) from None
                delay = min(delay, policy.timeout - waited)
            logger.warning(
                "%s; retrying in %gs (attempt %d)", unreachable(address, exc), delay, attempt
            )
            await sleep(delay)
        else:
            if attempt > 1:
                logger.info(
                    "Redis at %s answers (after %d attempts, %.1fs)",
                    address,
                    attempt,
                    time.monotonic() - started,
                )
            return server
