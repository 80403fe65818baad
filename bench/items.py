"""Demo products stored as the store pipeline writes them (``core.store``: the item
index's template and aliases, the document shape), for the benchmarks that measure what
comes after the crawl: the LLM step, search."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable

from elasticsearch import AsyncElasticsearch, Elasticsearch
from elasticsearch.helpers import bulk

from core.items_schema import plain_fields
from core.store import build_action, ensure_item_index
from crawlers.items import DemoProduct, schema_for

JOB_ID = "bench-job"


def store_products(
    es_url: str, es: Elasticsearch, site: str, products: Iterable[DemoProduct]
) -> list[str]:
    """``products`` into ``items-<site>-demo_product`` (declared first, as the store does),
    one bulk load, refreshed; returns the item keys in order."""
    schema = schema_for(DemoProduct)

    async def declare() -> None:
        client = AsyncElasticsearch(es_url)
        try:
            await ensure_item_index(client, site, schema.item_type, schema.es_properties)
        finally:
            await client.close()

    asyncio.run(declare())
    now = int(time.time() * 1000)
    actions = []
    for item in products:
        fields = plain_fields(item)
        actions.append(
            build_action(
                site=site,
                item_type=schema.item_type,
                key=schema.key(site, fields),
                fields=fields,
                content_hash=schema.content_hash(fields),
                job_id=JOB_ID,
                seen_ms=now,
                first_seen_ms=now,
                last_changed_ms=now,
            )
        )
    bulk(es, [a.bulk_op() for a in actions], refresh=True)
    return [a.key for a in actions]
