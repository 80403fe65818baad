"""``GET /items/{key}/history`` (FastAPI TestClient) over a real Elasticsearch node: a
stored item's change documents newest first, [] for one that never changed, 404 for a
key no stored item has."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from elasticsearch import AsyncElasticsearch, Elasticsearch
from fastapi.testclient import TestClient

from core.store import ItemStore, StoreAction
from core.store.changes import change_action, changes_alias, ensure_changes_index
from crawlers.items import DemoProduct
from harness.es_node import ElasticsearchNode
from search.api import create_app
from standins.demo_site.catalog import build_catalog
from tests.core.store.support import BASE, FAST, action_for, clean_site

SITE = "historyapi"
T0 = 1_700_000_000_000
DAY = 86_400_000


def change(
    key: str, job: str, ms: int, field: str, old: object, new: object, kind: str
) -> StoreAction:
    return change_action(
        site=SITE,
        item_type="demo_product",
        key=key,
        job_id=job,
        seen_ms=ms,
        field=field,
        old=old,
        new=new,
        kind=kind,
    )


@pytest.fixture(scope="module")
def keys(es_node: ElasticsearchNode) -> Iterator[tuple[str, str]]:
    """Two stored products; the first changed in two later jobs, the second never."""
    es = Elasticsearch(es_node.url)
    products = [DemoProduct(**p.to_dict(BASE)) for p in build_catalog(n_products=2).products]
    items = [action_for(SITE, item, seen=T0, first=T0) for item in products]
    changed, quiet = items[0].key, items[1].key
    actions = [
        *items,
        change(changed, "job-2", T0 + DAY, "price", 20.0, 18.0, "price_drop"),
        change(changed, "job-3", T0 + 2 * DAY, "price", 18.0, 19.5, "price_rise"),
        change(
            changed, "job-3", T0 + 2 * DAY, "availability", "InStock", "OutOfStock", "out_of_stock"
        ),
    ]

    async def write() -> None:
        client = AsyncElasticsearch(es_node.url)
        try:
            async with ItemStore(client, None, settings=FAST) as store:
                await asyncio.gather(*(store.put(action) for action in actions))
        finally:
            await client.close()

    def clean() -> None:
        clean_site(es, SITE)
        es.indices.delete(index=f"changes-{SITE}*", ignore_unavailable=True, allow_no_indices=True)

    clean()
    # changes-<site> is declared by the crawl's history pipeline; here by hand.
    asyncio.run(_declare(es_node.url))
    asyncio.run(write())
    es.indices.refresh(index=changes_alias(SITE))
    yield changed, quiet
    clean()
    es.close()


async def _declare(url: str) -> None:
    client = AsyncElasticsearch(url)
    try:
        await ensure_changes_index(client, SITE)
    finally:
        await client.close()


@pytest.fixture
def client(es: Elasticsearch) -> TestClient:
    return TestClient(create_app(es, None))


def test_history_lists_an_items_changes_newest_first(
    client: TestClient, keys: tuple[str, str]
) -> None:
    changed, _ = keys
    response = client.get(f"/items/{changed}/history")
    assert response.status_code == 200
    body = response.json()
    assert body["item_key"] == changed
    assert [(c["job_id"], c["field"], c["old"], c["new"], c["kind"]) for c in body["changes"]] == [
        ("job-3", "availability", "InStock", "OutOfStock", "out_of_stock"),
        ("job-3", "price", "18.0", "19.5", "price_rise"),
        ("job-2", "price", "20.0", "18.0", "price_drop"),
    ]
    assert body["changes"][1]["new_number"] == 19.5
    assert body["changes"][2]["time"] == "2023-11-15T22:13:20.000Z"
    limited = client.get(f"/items/{changed}/history", params={"limit": 1}).json()
    assert [c["kind"] for c in limited["changes"]] == ["out_of_stock"]


def test_an_item_that_never_changed_has_an_empty_history(
    client: TestClient, keys: tuple[str, str]
) -> None:
    _, quiet = keys
    response = client.get(f"/items/{quiet}/history")
    assert response.status_code == 200 and response.json() == {"item_key": quiet, "changes": []}


def test_an_unknown_key_is_404(client: TestClient, keys: tuple[str, str]) -> None:
    for key in (f"{SITE}:demo_product:DM-99999", "nosuchsite:demo_product:x", "not-a-key"):
        response = client.get(f"/items/{key}/history")
        assert response.status_code == 404, key
        assert "no item" in response.json()["detail"]
    assert client.get(f"/items/{keys[0]}/history", params={"limit": 0}).status_code == 422
