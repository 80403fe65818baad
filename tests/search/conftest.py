from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from elasticsearch import Elasticsearch

from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from indexing.index import chunks_index
from indexing.multilingual import MultilingualEmbedder
from indexing.process import ProcessReport, process_job
from standins.demo_site.catalog import Catalog, build_catalog
from tests.indexing import stored_vectors
from tests.indexing.support import (
    RecordingEmbedder,
    product_item,
    recording,
    run_shared_dir,
    store_job,
)

SITE = "searchdemo"


@dataclass
class SearchableDemo:
    site: str
    es: Elasticsearch
    catalog: Catalog
    report: ProcessReport
    # Catalog texts the model embedded live: 0 unless the kept vectors are stale.
    embedded_live: int


@pytest.fixture(scope="package")
def searchable_demo(
    es_node: ElasticsearchNode, redis_server: RedisServer, local_embedder: RecordingEmbedder
) -> Iterator[SearchableDemo]:
    """The demo catalog crawled by one job (real pipelines) and run through llm-process."""
    es = Elasticsearch(es_node.url, request_timeout=120)
    catalog = build_catalog()
    items = [product_item(p, "job-1") for p in catalog.products]
    store_job(es_node.url, redis_server.url, SITE, "job-1", items)
    before = local_embedder.computed
    report = process_job(es, redis_server.client(), SITE, "job-1", local_embedder)
    yield SearchableDemo(SITE, es, catalog, report, local_embedder.computed - before)
    _write_if_asked(local_embedder)
    es.indices.delete(index=f"items-{SITE}-*,{chunks_index(SITE)}", ignore_unavailable=True)
    es.close()


MULTILINGUAL_SITE = "searchdemo_ml"


@pytest.fixture(scope="session")
def multilingual_embedder(tmp_path_factory: pytest.TempPathFactory) -> RecordingEmbedder:
    """The multilingual offline model, its vectors shared by the run's workers."""
    return recording(MultilingualEmbedder(), run_shared_dir(tmp_path_factory))


@pytest.fixture(scope="package")
def multilingual_demo(
    es_node: ElasticsearchNode, redis_server: RedisServer, multilingual_embedder: RecordingEmbedder
) -> Iterator[SearchableDemo]:
    """The demo catalog (English) indexed with the multilingual offline model, the
    default one: what a shopper's query in another language is matched against."""
    es = Elasticsearch(es_node.url, request_timeout=120)
    catalog = build_catalog()
    items = [product_item(p, "job-1") for p in catalog.products]
    store_job(es_node.url, redis_server.url, MULTILINGUAL_SITE, "job-1", items)
    before = multilingual_embedder.computed
    report = process_job(
        es, redis_server.client(), MULTILINGUAL_SITE, "job-1", multilingual_embedder
    )
    embedded_live = multilingual_embedder.computed - before
    yield SearchableDemo(MULTILINGUAL_SITE, es, catalog, report, embedded_live)
    _write_if_asked(multilingual_embedder)
    es.indices.delete(
        index=f"items-{MULTILINGUAL_SITE}-*,{chunks_index(MULTILINGUAL_SITE)}",
        ignore_unavailable=True,
    )
    es.close()


def _write_if_asked(embedder: RecordingEmbedder) -> None:
    """Under ``make test-vectors``: keep what this process embedded with the model (the
    catalog's chunks and the queries the package searched for)."""
    if stored_vectors.writing():
        path = stored_vectors.StoredVectors.write(embedder.name, embedder.memory)
        print(f"\nwrote {len(embedder.memory)} vectors of {embedder.name} to {path}")
