"""LLM-step throughput and query-embedding latency of each embedding backend, and bulk vs
per-document indexing of the same chunk documents.

    .venv/bin/python -m bench.embedding [--products 300] [--rounds 3] [--query-rounds 5]

Starts an Elasticsearch node, stores ``--products`` demo products as the store pipeline
does, and per backend (USE multilingual v3, all-MiniLM-L6-v2, OpenAI-compatible against
``harness.openai_stub``) times ``indexing.process.process_items`` and single-query
embedding; then bulk vs one request per document. Rows interleaved, medians over rounds.
What each row means: docs/indexing-and-search.md "Benchmarks".
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch
from elasticsearch.helpers import bulk

from bench import smoke
from bench.items import JOB_ID, store_products
from bench.multilingual_catalog import LANGUAGES, QUERIES
from crawlers.items import DemoProduct
from harness.es_node import ElasticsearchNode
from harness.openai_stub import OpenAIStub, hashed_vectors
from indexing.embedders import KNOWN_DIMS, Embedder, LocalEmbedder, OpenAIEmbedder
from indexing.index import chunks_index, chunks_mapping
from indexing.multilingual import MultilingualEmbedder
from indexing.process import process_items
from standins.demo_site.catalog import build_catalog

SITE = "bench"
BASE_URL = "http://demo.example"
OPENAI_MODEL = "text-embedding-3-small"
STAND_IN_KEY = "sk-bench-stand-in"


class TimedEmbedder:
    """An embedder, recording the seconds spent embedding."""

    def __init__(self, inner: Embedder) -> None:
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


@dataclass
class Backend:
    """One row: a label and the embedder, built once for the run (models load once)."""

    label: str
    embedder: TimedEmbedder
    process: list[float] = field(default_factory=list)  # llm-process chunks/s per round
    embed: list[float] = field(default_factory=list)  # embedding alone, chunks/s per round
    share: list[float] = field(default_factory=list)  # embedding's share of the step
    query_ms: list[float] = field(default_factory=list)  # every query embedding, ms


@contextmanager
def backends() -> Iterator[list[Backend]]:
    """The three backends; the OpenAI stand-in serves while they are in use."""
    with ExitStack() as stack:
        dims = KNOWN_DIMS[OPENAI_MODEL]
        stub = stack.enter_context(OpenAIStub(api_key=STAND_IN_KEY, vectors=hashed_vectors(dims)))
        openai = OpenAIEmbedder(OPENAI_MODEL, api_key=STAND_IN_KEY, base_url=stub.base_url)
        yield [
            Backend("USE multilingual v3 (default)", TimedEmbedder(MultilingualEmbedder())),
            Backend("all-MiniLM-L6-v2", TimedEmbedder(LocalEmbedder())),
            Backend("OpenAI-compatible (loopback stand-in)", TimedEmbedder(openai)),
        ]


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


def llm_process(es: Elasticsearch, keys: list[str], backend: Backend) -> tuple[int, float]:
    """One llm-process run of ``backend`` into a fresh chunks index: (chunks, seconds)."""
    es.indices.delete(index=chunks_index(SITE), ignore_unavailable=True)
    embedder = backend.embedder
    embedder.seconds = 0.0
    started = time.perf_counter()
    report = process_items(es, SITE, keys, embedder)
    elapsed = time.perf_counter() - started
    if report.processed != len(keys) or report.failed_writes:
        raise RuntimeError(f"{backend.label}: {report.as_dict()}")
    chunks = report.chunks_written
    backend.process.append(chunks / elapsed)
    backend.embed.append(chunks / embedder.seconds)
    backend.share.append(embedder.seconds / elapsed)
    return chunks, elapsed


def query_latencies(embed: Callable[[Sequence[str]], object], rounds: int) -> list[float]:
    """ms to embed each query of the multilingual set alone, ``rounds`` times."""
    times = []
    for _ in range(rounds):
        for language in LANGUAGES:
            for query, _ in QUERIES[language]:
                started = time.perf_counter()
                embed([query])
                times.append((time.perf_counter() - started) * 1000)
    return times


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


def percentile(values: Sequence[float], p: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


def report(rows: list[Backend], bulk_rate: float, single_rate: float) -> None:
    print(
        f"{'backend':<40}{'llm-process':>12}{'embedding':>10}{'embed only':>11}"
        f"{'query p50':>10}{'query p95':>10}"
    )
    print(f"{'':<40}{'chunks/s':>12}{'share':>10}{'chunks/s':>11}{'ms':>10}{'ms':>10}")
    for row in rows:
        print(
            f"{row.label:<40}{statistics.median(row.process):>12.1f}"
            f"{statistics.median(row.share):>10.0%}{statistics.median(row.embed):>11.1f}"
            f"{percentile(row.query_ms, 50):>10.1f}{percentile(row.query_ms, 95):>10.1f}"
        )
    print(f"indexing only (the default's chunk documents): bulk {bulk_rate:.0f} docs/s, ", end="")
    print(f"one request per document {single_rate:.0f} docs/s: {bulk_rate / single_rate:.1f}x")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--products", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--query-rounds", type=int, default=5, help="passes over the queries")
    args = smoke.parse_args(parser, argv, products=8, rounds=1, query_rounds=1)
    if min(args.products, args.rounds, args.query_rounds) < 1:
        parser.error("--products, --rounds and --query-rounds must be positive")
    load = os.getloadavg()[0]
    with (
        tempfile.TemporaryDirectory(prefix="bench-embedding-") as tmp,
        ElasticsearchNode(run_dir=Path(tmp)) as node,
        backends() as rows,
    ):
        es = Elasticsearch(node.url, request_timeout=120)
        keys = store_items(node.url, es, args.products)
        print(
            f"{args.products} demo products, {args.rounds} round(s), {os.cpu_count()} cores "
            f"(load average {load:.1f} at start), ES {node.url}"
        )
        docs: list[dict[str, Any]] = []
        for round_no in range(1, args.rounds + 1):
            for row in rows:
                chunks, elapsed = llm_process(es, keys, row)
                if row is rows[0]:
                    docs = chunk_documents(es)
                    if len(docs) != chunks:
                        raise RuntimeError(f"{len(docs)} chunk documents for {chunks} chunks")
                row.query_ms += query_latencies(row.embedder.inner.embed, args.query_rounds)
                print(
                    f"  round {round_no} {row.label}: {chunks} chunks in {elapsed:.1f}s, "
                    f"{row.process[-1]:.1f} chunks/s (embedding {row.share[-1]:.0%})"
                )
        dims = rows[0].embedder.dims
        bulk_rate = index_bulk(es, docs, dims)
        single_rate = index_one_by_one(es, docs, dims)
        es.close()
    print()
    report(rows, bulk_rate, single_rate)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
