"""The crawl's services: one set of clients and shared components per crawler.

Every pipeline, middleware and extension asks ``CrawlServices.of(crawler)`` for what it
shares with the others, instead of building its own client or hanging an attribute on
the Crawler:

* ``redis``: the one asyncio Redis client (``core.redis_client.connect_async``, a pool
  callers wait on), shared by dedup, the store's spill and ledger, history, cards, the
  ledger, sessions, budgets...;
* ``sync_redis()``: the one sync client of the frontier (scheduler, dupefilter, worker
  extension), scrapy-redis' factory for one Redis, redis-py's cluster client with
  ``REDIS_CLUSTER``;
* ``es``: the one ``AsyncElasticsearch`` client of the worker (``es_kwargs``);
* ``ledger`` and ``clock``: the job ledger and the shared clock;
* ``component(cls)``: any other per-crawl component (the card gate, the budget state),
  built once with ``cls.from_crawler(crawler)``.

Clients are built on first use, inside the running event loop they bind to, and closed
once, when the engine stops: after ``spider_closed``, so every component's own close
(the store's last flush, the jobs document) still has them.
"""

from __future__ import annotations

import logging
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

from elasticsearch import AsyncElasticsearch
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings
from scrapy_redis import defaults as scrapy_redis_defaults
from scrapy_redis.connection import get_redis_from_settings

from core.config import settings_elasticsearch_kwargs
from core.redis_client import AsyncClient, Client, connect, connect_async
from core.store.settings import required
from crawlers.runtime.clock import SharedClock
from crawlers.runtime.item_context import discard_context
from crawlers.runtime.ledger import CrawlLedger

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
_SERVICES: WeakKeyDictionary[Crawler, CrawlServices] = WeakKeyDictionary()
# Connections of the shared asyncio client: every component's commands go through it,
# each holding a connection only for one command or pipeline, and batched (dedup, the
# ledger, cards), so a few dozen serve hundreds of items in flight.
REDIS_MAX_CONNECTIONS = 32


def redis_from_settings(settings: BaseSettings) -> Client:
    """A sync Redis client from ``REDIS_URL``, ``REDIS_PARAMS``: scrapy-redis' factory for
    one Redis, redis-py's cluster client with ``REDIS_CLUSTER``.

    A single-Redis client connects on first use; a cluster client reads the slot map as
    it is built, so with no node reachable this raises ``redis.ConnectionError`` (the
    worker builds it inside ``crawlers.frontier.connect.wait_for_redis``)."""
    if not settings.getbool("REDIS_CLUSTER"):
        return get_redis_from_settings(settings)
    params = {**scrapy_redis_defaults.REDIS_PARAMS, **settings.getdict("REDIS_PARAMS")}
    params.pop("redis_cls", None)
    return connect(str(settings["REDIS_URL"]), cluster=True, **params)


def es_client_kwargs(settings: BaseSettings) -> dict[str, Any]:
    """Arguments of the crawl's Elasticsearch client, from ``ELASTICSEARCH_*``.

    The client does not retry a request (no status, no timeout): each component is the
    one retry layer of its hop (the store's writer, dedup's bounded retries). Only with
    several hosts (ELASTICSEARCH_URL listing a cluster's nodes) a failed connection, a
    node that is down, is tried once on each other node, so one node's loss does not
    stall the hop.
    """
    kwargs = settings_elasticsearch_kwargs(settings)
    hosts = kwargs["hosts"]
    return {
        **kwargs,
        "request_timeout": float(required(settings, "STORE_REQUEST_TIMEOUT")),
        "max_retries": len(hosts) - 1 if isinstance(hosts, list) else 0,
        "retry_on_status": (),
        "retry_on_timeout": False,
    }


def async_redis(settings: BaseSettings) -> AsyncClient:
    """An asyncio Redis client from ``REDIS_URL``, ``REDIS_PARAMS``, ``REDIS_CLUSTER``: the
    crawl's (``CrawlServices.redis``), or a command's beside a crawl (the spill drain)."""
    return connect_async(
        str(settings["REDIS_URL"]),
        max_connections=REDIS_MAX_CONNECTIONS,
        params=settings.getdict("REDIS_PARAMS"),
        cluster=settings.getbool("REDIS_CLUSTER"),
    )


def elasticsearch(settings: BaseSettings) -> AsyncElasticsearch:
    """An Elasticsearch client from ``ELASTICSEARCH_*`` (``es_client_kwargs``)."""
    return AsyncElasticsearch(**es_client_kwargs(settings))


class CrawlServices:
    """One per crawler (``of``); see the module docstring."""

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        self.crawler = crawler
        self.redis_url: str | None = s.get("REDIS_URL") or None
        self.cluster = s.getbool("REDIS_CLUSTER")
        self.es_url: str | None = s.get("ELASTICSEARCH_URL") or None
        self._redis: AsyncClient | None = None
        self._sync_redis: Client | None = None
        self._es: AsyncElasticsearch | None = None
        self._es_kwargs: dict[str, Any] | None = None
        self._components: dict[type, Any] = {}
        self._ledger: CrawlLedger | None = None
        self._clock: SharedClock | None = None
        # Set by the pipeline that leaves verdicts on items (dedup): the store needs one.
        self.verdicts = False
        crawler.signals.connect(self.aclose, signal=signals.engine_stopped)
        # An item that left the pipelines leaves its context behind.
        for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
            crawler.signals.connect(discard_context, signal=signal)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlServices:
        return cls(crawler)

    @classmethod
    def of(cls, crawler: Crawler) -> CrawlServices:
        """The crawler's services, built on first use."""
        services = _SERVICES.get(crawler)
        if services is None:
            services = _SERVICES[crawler] = cls.from_crawler(crawler)
        return services

    @property
    def ledger(self) -> CrawlLedger | None:
        """The job ledger on the crawl's Redis client; None without ``REDIS_URL`` (a local
        crawl's figures are its own Scrapy stats)."""
        if self._ledger is None and self.redis_url:
            self._ledger = CrawlLedger(self.crawler, lambda: self.redis)
        return self._ledger

    @property
    def clock(self) -> SharedClock:
        """The crawl's shared clock (sampled when the spider opens)."""
        if self._clock is None:
            self._clock = SharedClock(self.ledger)
            self.crawler.signals.connect(self._clock.spider_opened, signal=signals.spider_opened)
        return self._clock

    @property
    def redis(self) -> AsyncClient:
        """The crawl's asyncio Redis client; RuntimeError without ``REDIS_URL``."""
        if self._redis is None:
            if not self.redis_url:
                raise RuntimeError("no REDIS_URL: the crawl has no Redis client")
            self._redis = async_redis(self.crawler.settings)
        return self._redis

    def sync_redis(self) -> Client:
        """The frontier's sync client (built on first call: for a Redis Cluster that reads
        the slot map, so it raises ``redis.ConnectionError`` while no node answers)."""
        if self._sync_redis is None:
            self._sync_redis = redis_from_settings(self.crawler.settings)
        return self._sync_redis

    @property
    def has_sync_redis(self) -> bool:
        return self._sync_redis is not None

    @property
    def es_kwargs(self) -> dict[str, Any]:
        if self._es_kwargs is None:
            self._es_kwargs = es_client_kwargs(self.crawler.settings)
        return self._es_kwargs

    @property
    def es(self) -> AsyncElasticsearch:
        """The worker's Elasticsearch client; RuntimeError without ``ELASTICSEARCH_URL``."""
        if self._es is None:
            if not self.es_url:
                raise RuntimeError("no ELASTICSEARCH_URL: the crawl has no Elasticsearch client")
            self._es = AsyncElasticsearch(**self.es_kwargs)
        return self._es

    def component(self, cls: type[_T]) -> _T:
        """The crawl's one ``cls`` (built with ``cls.from_crawler(crawler)`` on first use)."""
        found = self._components.get(cls)
        if found is None:
            found = self._components[cls] = cls.from_crawler(self.crawler)  # type: ignore[attr-defined]  # any class with from_crawler, Scrapy's convention
        return found

    async def aclose(self) -> None:
        """The ledger's last writes, then every client, once (the engine stopped)."""
        if self._ledger is not None:
            await self._ledger.close()
        redis_client, self._redis = self._redis, None
        es, self._es = self._es, None
        sync, self._sync_redis = self._sync_redis, None
        if redis_client is not None:
            await redis_client.aclose()
        if es is not None:
            await es.close()
        if sync is not None:
            sync.close()
