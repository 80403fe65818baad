"""The mark-removed step in the scrape flow, end to end (real Prefect server and worker,
Redis, ES, the demo shop): products gone from the shop for K complete runs are marked
removed once, their chunks deleted, and the run's report and job document count them;
back in the shop, they are restored and chunked again."""

from __future__ import annotations

from core.keys import SiteKeys
from core.store import doc_id_for, index_for_key
from crawlers.profiles import SiteProfile
from indexing.index import chunks_index
from standins.demo_site.catalog import build_catalog
from tests.orchestration.test_scrape_flow import PRODUCTS, Stack, job_id_of, stack

__all__ = ["stack"]  # the module's stack (its own shop, worker and clean Redis/ES)


def test_products_gone_for_k_runs_are_removed_once_then_restored(stack: Stack) -> None:
    k = SiteProfile.load("demo").recrawl.removed_after_jobs
    added = sorted(build_catalog().revised(1).added_skus)
    es, server = stack.es(), stack.redis.client()
    stack.site.control(revision=1)  # the base catalog and the products revision 1 adds
    try:
        first = stack.wait(stack.trigger("scrape-demo"), timeout=600)
    finally:
        stack.site.control(revision=0)  # ... which are gone from the shop from now on
    assert first["state"]["type"] == "COMPLETED", first["state"]
    keys = [f"demo:demo_product:{sku}" for sku in added]
    assert all(server.hexists(SiteKeys("demo").item_hashes, key) for key in keys)

    for run in range(1, k + 1):
        run_id = stack.trigger("scrape-demo")
        assert stack.wait(run_id, timeout=600)["state"]["type"] == "COMPLETED"
        assert stack.task_states(run_id)["mark-removed"] == "COMPLETED"
        es.indices.refresh(index="jobs")
        job = es.get(index="jobs", id=f"demo:{job_id_of(run_id)}")["_source"]
        assert job["items_scraped"] == PRODUCTS
        assert (job["items_removed"], job["items_restored"]) == ((len(added) if run == k else 0), 0)
    (report,) = [a["data"] for a in stack.artifacts(run_id) if a["key"] == "scrape-demo-report"]
    assert f"| removed | {len(added)} |" in report

    docs = es.mget(docs=[{"_index": index_for_key(key), "_id": doc_id_for(key)} for key in keys])
    assert all(doc["_source"].get("removed_at") for doc in docs["docs"])
    es.indices.refresh(index=chunks_index("demo"))
    assert es.count(index=chunks_index("demo"), query={"terms": {"item_key": keys}})["count"] == 0
    assert es.count(index="items-demo", query={"exists": {"field": "removed_at"}})["count"] == len(
        added
    )

    # Back in the shop: restored by the next run, removed_at cleared, chunked again.
    stack.site.control(revision=1)
    try:
        run_id = stack.trigger("scrape-demo")
        assert stack.wait(run_id, timeout=600)["state"]["type"] == "COMPLETED"
    finally:
        stack.site.control(revision=0)
    es.indices.refresh(index="jobs")
    job = es.get(index="jobs", id=f"demo:{job_id_of(run_id)}")["_source"]
    assert (job["items_removed"], job["items_restored"]) == (0, len(added))
    docs = es.mget(docs=[{"_index": index_for_key(key), "_id": doc_id_for(key)} for key in keys])
    assert not any(doc["_source"].get("removed_at") for doc in docs["docs"])
    es.indices.refresh(index=chunks_index("demo"))
    chunked = es.search(
        index=chunks_index("demo"),
        size=0,
        query={"terms": {"item_key": keys}},
        aggs={"items": {"cardinality": {"field": "item_key"}}},
    )["aggregations"]["items"]["value"]
    assert chunked == len(added)
