"""Drain a site's Redis spill into Elasticsearch from outside a crawl (the drain CLI)."""

from __future__ import annotations

from elasticsearch import AsyncElasticsearch

from core.figures.ledger import JobLedger
from core.redis_client import AsyncClient
from core.store.settings import StoreSettings
from core.store.spill_redis import RedisSpill
from core.store.writer import ItemStore


async def drain_site_spill(
    es: AsyncElasticsearch, server: AsyncClient, site: str, *, settings: StoreSettings
) -> tuple[int, int]:
    """Drain ``site``'s Redis spill into Elasticsearch; returns (drained, remaining).

    Like a worker's drain, it records what Elasticsearch accepted in the jobs' ledgers."""
    spill = RedisSpill(server, site, lock_timeout=settings.spill_lock_seconds)
    store = ItemStore(es, spill, settings=settings, on_stored=JobLedger(server, site).stored)
    drained = await store.drain_spill()
    return drained, await spill.size()
