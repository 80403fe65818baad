"""Shared helpers of the store tests: actions from demo products, a dead node, docs."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import redis.asyncio
from elasticsearch import AsyncElasticsearch, Elasticsearch

from core.items_schema import plain_fields
from core.redis_client import connect_async
from core.store import IndexLayout, StoreAction, StoreSettings, build_action
from crawlers.addon import project_settings
from crawlers.items import schema_by_type
from harness.base import free_port
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer

T = TypeVar("T")
BASE = "http://shop.example"


def store_settings(**overrides: Any) -> StoreSettings:
    """The platform's ``STORE_*`` defaults, with ``overrides``."""
    return StoreSettings.from_settings(project_settings(), **overrides)


FAST = store_settings(
    flush_interval=0.2,
    spill_after=0.5,
    retry_backoff=0.05,
    retry_backoff_max=0.2,
    probe_interval=0.2,
)


def action_for(
    site: str,
    item: Any,
    *,
    seen: int,
    first: int,
    changed: int | None = None,
    job: str = "j1",
) -> StoreAction:
    schema = schema_by_type(type(item).__item_schema__.item_type)
    fields = plain_fields(item)
    return build_action(
        site=site,
        item_type=schema.item_type,
        key=schema.key(site, fields),
        fields=fields,
        content_hash=schema.content_hash(fields),
        job_id=job,
        seen_ms=seen,
        first_seen_ms=first,
        last_changed_ms=changed or first,
    )


def run(
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    body: Callable[[AsyncElasticsearch, redis.asyncio.Redis], Awaitable[T]],
) -> T:
    async def main() -> T:
        es = AsyncElasticsearch(es_node.url, request_timeout=30)
        server = connect_async(redis_server.url)
        try:
            return await body(es, server)
        finally:
            await es.close()
            await server.aclose()

    return asyncio.run(main())


def dead_es() -> AsyncElasticsearch:
    """A client for a node that is down: connection refused, fast."""
    return AsyncElasticsearch(f"http://127.0.0.1:{free_port()}", request_timeout=2, max_retries=0)


def docs(es: Elasticsearch, site: str) -> dict[str, dict[str, Any]]:
    es.indices.refresh(index=IndexLayout.read_alias(site))
    hits = es.search(index=IndexLayout.read_alias(site), size=5000)["hits"]["hits"]
    return {hit["_id"]: hit["_source"] for hit in hits}


def clean_site(es: Elasticsearch, name: str) -> None:
    es.indices.delete(index=f"items-{name}-*", ignore_unavailable=True, allow_no_indices=True)
    templates = es.options(ignore_status=404).indices.get_index_template(name=f"items-{name}-*")
    for template in templates.get("index_templates", []):
        es.indices.delete_index_template(name=template["name"])
