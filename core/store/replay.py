"""Drain a site's Redis spill into Elasticsearch from outside a crawl (flows, the CLI)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import redis.asyncio
from elasticsearch import AsyncElasticsearch

from core.store.settings import StoreSettings
from core.store.spill_redis import RedisSpill
from core.store.writer import ItemStore


async def drain_site_spill(
    es: AsyncElasticsearch, server: redis.asyncio.Redis, site: str, *, settings: StoreSettings
) -> tuple[int, int]:
    """Drain ``site``'s Redis spill into Elasticsearch; returns (drained, remaining)."""
    spill = RedisSpill(server, site)
    store = ItemStore(es, spill, settings=settings)
    drained = await store.drain_spill()
    return drained, await spill.size()


def drain_spill_sync(
    site: str, *, redis_url: str, es_kwargs: Mapping[str, Any], settings: StoreSettings
) -> tuple[int, int]:
    """``drain_site_spill`` for sync callers; returns (drained, remaining)."""

    async def run() -> tuple[int, int]:
        es = AsyncElasticsearch(**es_kwargs)
        server = redis.asyncio.Redis.from_url(redis_url)
        try:
            return await drain_site_spill(es, server, site, settings=settings)
        finally:
            await es.close()
            await server.aclose()

    return asyncio.run(run())
