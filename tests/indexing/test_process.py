"""The llm-process step against a real ES node and Redis, after a demo job stored by the
real item pipelines: every product chunked, a re-run writes nothing, a changed product's
chunks are replaced exactly, other embedders are refused."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import Elasticsearch

from core.dedup.detector import job_changes
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from indexing.chunking import Chunker, chunk_id
from indexing.embedders import LOCAL_DIMS, LOCAL_MODEL, load_tokenizer
from indexing.index import EmbedderMismatch, chunks_index, index_embedder
from indexing.process import (
    ChunkIndexError,
    ProcessReport,
    backfill_site,
    process_items,
    process_job,
)
from indexing.text import render_item
from standins.demo_site.catalog import Product, build_catalog
from tests.indexing.support import RecordingEmbedder, product_item, store_job

SITE = "llmdemo"
# The demo catalog's first 300 products: every case holds at any size, the offline model
# embeds their ~1,000 chunks in a fifth of the full catalog's time, and tests/search's
# whole-catalog fixtures embed the same texts (the run's workers share vectors).
PRODUCTS = 300
REPO = Path(__file__).resolve().parents[2]


@dataclass
class DemoJob:
    es: Elasticsearch
    redis_server: RedisServer
    node: ElasticsearchNode
    products: tuple[Product, ...]
    report: ProcessReport
    stored: dict[str, Any]


@pytest.fixture(scope="module")
def demo_job(
    es_node: ElasticsearchNode, redis_server: RedisServer, local_embedder: RecordingEmbedder
) -> Iterator[DemoJob]:
    es = Elasticsearch(es_node.url, request_timeout=120)
    products = build_catalog().products[:PRODUCTS]
    items = [product_item(p, "job-1") for p in products]
    stored = store_job(es_node.url, redis_server.url, SITE, "job-1", items)
    report = process_job(es, redis_server.client(), SITE, "job-1", local_embedder)
    yield DemoJob(es, redis_server, es_node, products, report, stored)
    es.indices.delete(index=f"items-{SITE}-*,{chunks_index(SITE)}", ignore_unavailable=True)
    es.close()


def all_chunks(es: Elasticsearch) -> dict[str, dict[str, Any]]:
    hits = es.search(
        index=chunks_index(SITE), size=10_000, query={"match_all": {}}, source_excludes=["vector"]
    )["hits"]["hits"]
    return {hit["_id"]: hit["_source"] for hit in hits}


def index_total(es: Elasticsearch) -> tuple[int, int]:
    """(index ops, delete ops) the chunks index has ever executed."""
    stats = es.indices.stats(index=chunks_index(SITE), metric="indexing")
    indexing = stats["indices"][chunks_index(SITE)]["primaries"]["indexing"]
    return indexing["index_total"], indexing["delete_total"]


def test_every_product_of_the_job_has_chunks(demo_job: DemoJob) -> None:
    report, es = demo_job.report, demo_job.es
    assert demo_job.stored.get("store/indexed") == PRODUCTS
    assert report.items == report.processed == PRODUCTS
    assert report.skipped_unchanged == report.missing == report.chunks_deleted == 0
    chunks = all_chunks(es)
    assert len(chunks) == report.chunks_written
    by_item: dict[str, list[dict[str, Any]]] = {}
    for chunk in chunks.values():
        by_item.setdefault(chunk["item_key"], []).append(chunk)
    assert set(by_item) == {f"{SITE}:demo_product:{p.sku}" for p in demo_job.products}
    for key, item_chunks in by_item.items():
        positions = sorted(c["position"] for c in item_chunks)
        assert positions == list(range(item_chunks[0]["n_chunks"])), key
        for c in item_chunks:
            assert c["chunk_id"] == chunk_id(key, c["position"])
            assert (c["site"], c["item_type"], c["job_id"]) == (SITE, "demo_product", "job-1")
            assert c["url"] == f"http://demo.example/product/{key.rsplit(':', 1)[1]}"
    # The prose of a product is in its first chunk; later chunks are headed by its name.
    product = demo_job.products[0]
    first = by_item[f"{SITE}:demo_product:{product.sku}"]
    first.sort(key=lambda c: c["position"])
    assert product.description in first[0]["text"]
    assert all(c["text"].startswith(product.name) for c in first)
    assert index_embedder(es, chunks_index(SITE)) == (
        "local:all-MiniLM-L6-v2-onnx-int8",
        LOCAL_DIMS,
    )
    # ES 9 leaves vectors out of _source unless asked for them.
    stored = es.get(index=chunks_index(SITE), id=first[0]["chunk_id"], source_exclude_vectors=False)
    assert len(stored["_source"]["vector"]) == LOCAL_DIMS


def test_rerun_of_the_same_job_writes_nothing(
    demo_job: DemoJob, local_embedder: RecordingEmbedder
) -> None:
    es = demo_job.es
    before_ops = index_total(es)
    before = all_chunks(es)
    texts_before = local_embedder.texts
    report = process_job(es, demo_job.redis_server.client(), SITE, "job-1", local_embedder)
    assert report.items == report.skipped_unchanged == PRODUCTS
    assert report.processed == report.chunks_written == report.chunks_deleted == 0
    assert local_embedder.texts == texts_before  # nothing was even embedded
    assert index_total(es) == before_ops
    assert all_chunks(es) == before


def test_backfill_and_the_cli_see_everything_up_to_date(
    demo_job: DemoJob, local_embedder: RecordingEmbedder
) -> None:
    report = backfill_site(demo_job.es, SITE, local_embedder)
    assert (report.items, report.skipped_unchanged, report.chunks_written) == (
        PRODUCTS,
        PRODUCTS,
        0,
    )

    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(ELASTICSEARCH_URL=demo_job.node.url, REDIS_URL=demo_job.redis_server.url)
    # The index was built with the English model: the CLI is told which (the offline
    # default is the multilingual one).
    env.update(EMBEDDING_MODEL=LOCAL_MODEL)
    done = subprocess.run(
        [sys.executable, "-m", "indexing", "process", "--site", SITE, "--job", "job-1"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["skipped_unchanged"] == PRODUCTS


def test_changed_product_replaces_exactly_its_chunks(
    demo_job: DemoJob, local_embedder: RecordingEmbedder
) -> None:
    es, products = demo_job.es, demo_job.products
    before = all_chunks(es)
    target = next(p for p in products if len(p.reviews) >= 7)
    key = f"{SITE}:demo_product:{target.sku}"
    old_ids = sorted(i for i, c in before.items() if c["item_key"] == key)
    assert len(old_ids) >= 3
    new_description = "A pared-back edition: no frills, no reviews yet, same trusted maker."
    items = [
        product_item(p, "job-2", description=new_description, reviews=[], review_count=0)
        if p is target
        else product_item(p, "job-2")
        for p in products
    ]
    store_job(demo_job.node.url, demo_job.redis_server.url, SITE, "job-2", items)
    assert job_changes(demo_job.redis_server.client(), SITE, "job-2").new_or_changed == {key}

    report = process_job(es, demo_job.redis_server.client(), SITE, "job-2", local_embedder)
    assert (report.items, report.processed, report.chunks_written) == (1, 1, 1)
    assert report.chunks_deleted == len(old_ids) - 1
    after = all_chunks(es)
    # Every other item's chunks are untouched (same ids, same content, same write time).
    assert {i: c for i, c in after.items() if c["item_key"] != key} == {
        i: c for i, c in before.items() if c["item_key"] != key
    }
    mine = [c for c in after.values() if c["item_key"] == key]
    assert [(c["chunk_id"], c["position"], c["n_chunks"]) for c in mine] == [(old_ids[0], 0, 1)]
    assert new_description in mine[0]["text"] and mine[0]["job_id"] == "job-2"
    old_phrase = target.description.split(".")[0]
    assert not es.search(
        index=chunks_index(SITE), query={"match_phrase": {"text": old_phrase}}, size=1
    )["hits"]["hits"]

    # Changing it back grows it to its original chunks again, ids and texts alike.
    store_job(
        demo_job.node.url,
        demo_job.redis_server.url,
        SITE,
        "job-3",
        [product_item(p, "job-3") for p in products],
    )
    report = process_job(es, demo_job.redis_server.client(), SITE, "job-3", local_embedder)
    assert (report.processed, report.chunks_written, report.chunks_deleted) == (
        1,
        len(old_ids),
        0,
    )
    restored = {i: c for i, c in all_chunks(es).items() if c["item_key"] == key}
    assert sorted(restored) == old_ids
    assert all(restored[i]["text"] == before[i]["text"] for i in old_ids)


def test_only_the_given_items_are_processed_and_missing_ones_counted(
    demo_job: DemoJob, local_embedder: RecordingEmbedder
) -> None:
    report = process_items(
        demo_job.es,
        SITE,
        [f"{SITE}:demo_product:DM-00001", f"{SITE}:demo_product:NO-SUCH"],
        local_embedder,
    )
    assert (report.items, report.skipped_unchanged, report.missing, report.processed) == (
        2,
        1,
        1,
        0,
    )


class OtherEmbedder:
    name = "test:other-model"
    dims = 8

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise AssertionError("must not embed into an index of another embedder")


def test_an_index_of_another_embedder_is_refused(demo_job: DemoJob) -> None:
    with pytest.raises(EmbedderMismatch, match="local:all-MiniLM-L6-v2-onnx-int8"):
        process_items(demo_job.es, SITE, [f"{SITE}:demo_product:DM-00001"], OtherEmbedder())


def test_chunker_counts_model_tokens_and_overlaps(local_embedder: RecordingEmbedder) -> None:
    tokenizer = load_tokenizer()
    chunker = Chunker(max_tokens=40, overlap=10)
    sentences = [f"Sentence number {i} talks about feature {i} of the lamp." for i in range(30)]
    doc = {
        "item_key": "s:product:1",
        "site": "s",
        "item_type": "product",
        "name": "Lamp",
        "url": "https://example.com/lamp",
        "description": "<div><p>" + "</p><p>".join(sentences) + "</p><script>x()</script></div>",
    }
    chunks = chunker.chunk_item(doc)
    assert len(chunks) > 5
    assert all("<p>" not in c.text and "x()" not in c.text for c in chunks)
    for previous, current in itertools.pairwise(chunks):
        body = current.text.removeprefix("Lamp\n")
        assert len(tokenizer.encode(body, add_special_tokens=False).ids) <= 40
        # Overlap: the next chunk starts with text the previous one ended with.
        assert body.split()[0] in previous.text.split()[-12:]
        assert current.text.startswith("Lamp\n")
    assert [c.chunk_id for c in chunks] == [c.chunk_id for c in chunker.chunk_item(doc)]


def test_refused_writes_fail_the_step_and_a_rerun_repairs(
    es_node: ElasticsearchNode, redis_server: RedisServer, local_embedder: RecordingEmbedder
) -> None:
    site = "llmblocked"
    es = Elasticsearch(es_node.url, request_timeout=60)
    products = build_catalog().products[:5]
    index = chunks_index(site)
    try:
        store_job(
            es_node.url, redis_server.url, site, "j1", [product_item(p, "j1") for p in products]
        )
        process_job(es, redis_server.client(), site, "j1", local_embedder)
        changed = [product_item(products[0], "j2", description="A brand new description.")]
        store_job(es_node.url, redis_server.url, site, "j2", changed)
        es.indices.put_settings(index=index, settings={"index.blocks.write": True})
        with pytest.raises(ChunkIndexError, match="chunk writes failed for llmblocked") as failure:
            process_job(es, redis_server.client(), site, "j2", local_embedder)
        assert failure.value.report.processed == 1 and failure.value.report.failed_writes >= 1
        assert failure.value.report.errors
        es.indices.put_settings(index=index, settings={"index.blocks.write": False})
        report = process_job(es, redis_server.client(), site, "j2", local_embedder)
        assert report.processed == 1 and report.chunks_written >= 1 and not report.errors
        again = process_job(es, redis_server.client(), site, "j2", local_embedder)
        assert again.skipped_unchanged == 1 and again.chunks_written == 0
    finally:
        es.indices.put_settings(
            index=index, settings={"index.blocks.write": False}, ignore_unavailable=True
        )
        es.indices.delete(index=f"items-{site}-*,{index}", ignore_unavailable=True)
        es.close()


def test_items_render_as_readable_text() -> None:
    review = {
        "item_key": "tp:review:1",
        "site": "tp",
        "item_type": "review",
        "job_id": "j",
        "content_hash": "abc",
        "url": "https://example.com/r/1",
        "title": "Quick delivery",
        "body": "<p>Arrived in two days &amp; well packed.</p><p>Would order again.</p>",
        "rating": 5.0,
        "verified": True,
        "subject": {"kind": "business", "name": "Acme Ltd", "url": "https://acme.example"},
        "published_at": "2024-05-01",
        "location": {"lat": 40.4, "lon": -3.7},
    }
    text = render_item(review)
    assert text.startswith("Quick delivery\n\n")
    assert "Arrived in two days & well packed." in text and "<p>" not in text
    assert "Rating: 5. Verified: yes. Published at: 2024-05-01." in text
    assert "Subject: Acme Ltd, kind business" in text
    assert "https://" not in text and "40.4" not in text and "abc" not in text
