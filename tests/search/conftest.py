from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from elasticsearch import Elasticsearch

from demo_site.catalog import Catalog, build_catalog
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from indexing.index import chunks_index
from indexing.multilingual import MultilingualEmbedder
from indexing.process import ProcessReport, process_job
from tests.indexing.support import RecordingEmbedder, product_item, shared_local_embedder, store_job

SITE = "searchdemo"


@pytest.fixture(scope="session")
def local_embedder() -> RecordingEmbedder:
    return shared_local_embedder()


@dataclass
class SearchableDemo:
    site: str
    es: Elasticsearch
    catalog: Catalog
    report: ProcessReport


@pytest.fixture(scope="package")
def searchable_demo(
    es_node: ElasticsearchNode, redis_server: RedisServer, local_embedder: RecordingEmbedder
) -> Iterator[SearchableDemo]:
    """The demo catalog crawled by one job (real pipelines) and run through llm-process."""
    es = Elasticsearch(es_node.url, request_timeout=120)
    catalog = build_catalog()
    items = [product_item(p, "job-1") for p in catalog.products]
    store_job(es_node.url, redis_server.url, SITE, "job-1", items)
    report = process_job(es, redis_server.client(), SITE, "job-1", local_embedder)
    yield SearchableDemo(SITE, es, catalog, report)
    es.indices.delete(index=f"items-{SITE}-*,{chunks_index(SITE)}", ignore_unavailable=True)
    es.close()


MULTILINGUAL_SITE = "searchdemo_ml"


@functools.cache
def shared_multilingual_embedder() -> RecordingEmbedder:
    """One multilingual offline model per test session."""
    return RecordingEmbedder(MultilingualEmbedder())


@pytest.fixture(scope="package")
def multilingual_demo(
    es_node: ElasticsearchNode, redis_server: RedisServer
) -> Iterator[SearchableDemo]:
    """The demo catalog (English) indexed with the multilingual offline model, the
    default one: what a shopper's query in another language is matched against."""
    es = Elasticsearch(es_node.url, request_timeout=120)
    catalog = build_catalog()
    items = [product_item(p, "job-1") for p in catalog.products]
    store_job(es_node.url, redis_server.url, MULTILINGUAL_SITE, "job-1", items)
    report = process_job(
        es, redis_server.client(), MULTILINGUAL_SITE, "job-1", shared_multilingual_embedder()
    )
    yield SearchableDemo(MULTILINGUAL_SITE, es, catalog, report)
    es.indices.delete(
        index=f"items-{MULTILINGUAL_SITE}-*,{chunks_index(MULTILINGUAL_SITE)}",
        ignore_unavailable=True,
    )
    es.close()
