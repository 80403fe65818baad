"""LLM-step throughput: chunks embedded + indexed per second with the offline model, and
bulk vs per-document indexing of the same chunk documents.

    .venv/bin/python -m bench.embedding [--products 300] [--rounds 3]

Starts a real Elasticsearch node for the run, stores ``--products`` demo products as the
store pipeline does (``core.store``: templates, aliases, document shape), then per round:

* **llm-process**: ``indexing.process.process_items`` over every product into a fresh
  ``chunks-bench`` index: render + chunk + embed (all-MiniLM-L6-v2 int8 ONNX, CPU, every
  core) + bulk index + refresh. Reported as chunks/s, with the embedding share.
* **indexing only**, on the chunk documents (vectors included) of that round: one bulk
  stream (500 per request) into a fresh index, then one ``index`` request per document
  into another fresh index. The ratio of the two rates is computed in this run.

The first round also warms up the JVM and the ONNX session but is counted like the
others; the report gives medians over the rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch
from elasticsearch.helpers import bulk

from bench.items import JOB_ID, store_products
from crawlers.items import DemoProduct
from demo_site.catalog import build_catalog
from harness.es_node import ElasticsearchNode
from indexing.embedders import LocalEmbedder
from indexing.index import chunks_index, chunks_mapping
from indexing.process import process_items

SITE = "bench"
BASE_URL = "http://demo.example"


class TimedEmbedder:
    """The offline model, recording the seconds spent embedding."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self.inner = inner
        self.seconds = 0.0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dims(self) -> int:
        return self.inner.dims

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        started = time.perf_counter()
        vectors = self.inner.embed(texts)
        self.seconds += time.perf_counter() - started
        return vectors


def store_items(url: str, es: Elasticsearch, n: int) -> list[str]:
    """Demo products into items-bench, shaped exactly as the store pipeline writes them."""
    products = (
        DemoProduct(**product.to_dict(BASE_URL), job_id=JOB_ID)
        for product in build_catalog(n_products=n).products
    )
    return store_products(url, es, SITE, products)


def chunk_documents(es: Elasticsearch) -> list[dict[str, Any]]:
    """The chunk documents the LLM step wrote, vectors included (ES 9 hides them)."""
    response = es.search(
        index=chunks_index(SITE), size=10_000, query={"match_all": {}}, source_exclude_vectors=False
    )
    return [{"_id": hit["_id"], **hit["_source"]} for hit in response["hits"]["hits"]]


def fresh_index(es: Elasticsearch, name: str, dims: int) -> None:
    es.indices.delete(index=name, ignore_unavailable=True)
    es.indices.create(
        index=name,
        settings={"number_of_shards": 1, "number_of_replicas": 0},
        mappings=chunks_mapping(dims),
    )


def index_bulk(es: Elasticsearch, docs: list[dict[str, Any]], dims: int) -> float:
    fresh_index(es, "bench-bulk", dims)
    started = time.perf_counter()
    ops = ({"_index": "bench-bulk", "_id": d["_id"], "_source": _body(d)} for d in docs)
    bulk(es, ops, chunk_size=500, max_chunk_bytes=20 * 1024 * 1024)
    es.indices.refresh(index="bench-bulk")
    return len(docs) / (time.perf_counter() - started)


def index_one_by_one(es: Elasticsearch, docs: list[dict[str, Any]], dims: int) -> float:
    fresh_index(es, "bench-single", dims)
    started = time.perf_counter()
    for d in docs:
        es.index(index="bench-single", id=d["_id"], document=_body(d))
    es.indices.refresh(index="bench-single")
    return len(docs) / (time.perf_counter() - started)


def _body(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "_id"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--products", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    embedder = TimedEmbedder(LocalEmbedder())
    load = os.getloadavg()[0]
    results: dict[str, list[float]] = {"process": [], "embed": [], "bulk": [], "single": []}
    with (
        tempfile.TemporaryDirectory(prefix="bench-embedding-") as tmp,
        ElasticsearchNode(run_dir=Path(tmp)) as node,
    ):
        es = Elasticsearch(node.url, request_timeout=120)
        keys = store_items(node.url, es, args.products)
        print(
            f"{args.products} demo products, {args.rounds} rounds, {os.cpu_count()} cores "
            f"(load average {load:.1f} at start), ES {node.url}, embedder {embedder.name}"
        )
        for round_no in range(1, args.rounds + 1):
            es.indices.delete(index=chunks_index(SITE), ignore_unavailable=True)
            embedder.seconds = 0.0
            started = time.perf_counter()
            report = process_items(es, SITE, keys, embedder)
            elapsed = time.perf_counter() - started
            chunks = report.chunks_written
            docs = chunk_documents(es)
            if len(docs) != chunks or report.processed != len(keys):
                raise RuntimeError(f"round {round_no}: {report.as_dict()}")
            bulk_rate = index_bulk(es, docs, embedder.dims)
            single_rate = index_one_by_one(es, docs, embedder.dims)
            results["process"].append(chunks / elapsed)
            results["embed"].append(chunks / embedder.seconds)
            results["bulk"].append(bulk_rate)
            results["single"].append(single_rate)
            print(
                f"  round {round_no}: {chunks} chunks; llm-process {chunks / elapsed:6.1f} "
                f"chunks/s (embedding {embedder.seconds / elapsed:.0%} of {elapsed:.1f}s, "
                f"{chunks / embedder.seconds:.1f} chunks/s); indexing only: bulk "
                f"{bulk_rate:7.0f} docs/s, per-document {single_rate:6.0f} docs/s"
            )
        es.close()
    median = {name: statistics.median(values) for name, values in results.items()}
    print(f"median llm-process (chunk + embed + bulk index) {median['process']:8.1f} chunks/s")
    print(f"median embedding alone                          {median['embed']:8.1f} chunks/s")
    print(f"median indexing, bulk                           {median['bulk']:8.0f} docs/s")
    print(f"median indexing, one request per document       {median['single']:8.0f} docs/s")
    print(
        f"bulk / per-document                             {median['bulk'] / median['single']:8.1f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
