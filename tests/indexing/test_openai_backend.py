"""The OpenAI-compatible backend through the real ``openai`` SDK over HTTP, against a local
endpoint (harness/openai_stub.py): batching, both encodings, retry on 429/500 honouring
Retry-After, pacing by rate-limit headers, a clear error on a bad key, the choice of the
default backend, and a whole llm-process run on it."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import pytest
from elasticsearch import Elasticsearch
from pydantic import SecretStr

from core.config import PlatformSettings
from harness.es_node import ElasticsearchNode
from harness.openai_stub import OpenAIStub, hashed_vectors
from harness.redis_server import RedisServer
from indexing.embedders import (
    EmbedderUnavailable,
    EmbeddingAuthError,
    EmbeddingError,
    LocalEmbedder,
    OpenAIEmbedder,
    default_embedder,
)
from indexing.index import EmbedderMismatch, chunks_index, index_embedder
from indexing.multilingual import MultilingualEmbedder
from indexing.process import process_job
from search.core import HybridSearch
from standins.demo_site.catalog import build_catalog
from tests.indexing.support import RecordingEmbedder, product_item, store_job

KEY = "sk-test-key"


@pytest.fixture(scope="module")
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub(api_key=KEY, dims=8) as server:
        yield server


@pytest.fixture(autouse=True)
def clean(stub: OpenAIStub) -> None:
    stub.reset()


def embedder(stub: OpenAIStub, **kwargs: object) -> OpenAIEmbedder:
    options: dict[str, object] = {"api_key": SecretStr(KEY), "base_url": stub.base_url}
    options.update(kwargs)
    return OpenAIEmbedder("stub-embed", **options)  # type: ignore[arg-type]


def close(a: list[float], b: list[float]) -> bool:
    return all(math.isclose(x, y, abs_tol=1e-6) for x, y in zip(a, b, strict=True))


def test_batches_in_order_with_both_encodings(stub: OpenAIStub) -> None:
    texts = [f"text number {i}" for i in range(10)]
    expected = hashed_vectors(8)(texts)
    for fmt, sent in ((None, "base64"), ("float", "float")):
        stub.reset()
        vectors = embedder(stub, batch_size=4, encoding_format=fmt).embed(texts)
        assert all(close(v, e) for v, e in zip(vectors, expected, strict=True))
        assert [c.batch_size for c in stub.calls] == [4, 4, 2]
        # The SDK asks for base64 unless told otherwise; the stub answers in that format.
        assert {c.encoding_format for c in stub.calls} == {sent}
        assert {c.model for c in stub.calls} == {"stub-embed"}


def test_retries_429_honouring_retry_after_then_500(stub: OpenAIStub) -> None:
    stub.fail_next(429, retry_after="1")
    stub.fail_next(500)
    vectors = embedder(stub).embed(["a", "b"])
    assert len(vectors) == 2
    assert [c.status for c in stub.calls] == [429, 500, 200]
    # The SDK's own backoff starts at 0.5 s: a 1 s gap shows Retry-After was honoured.
    assert stub.calls[1].at - stub.calls[0].at >= 0.95


def test_gives_up_with_a_clear_error_when_still_rate_limited(stub: OpenAIStub) -> None:
    stub.fail_next(429, times=3, retry_after="0.1")
    with pytest.raises(EmbeddingError, match=r"kept rate-limiting after 2 retries \(429"):
        embedder(stub, max_retries=2).embed(["a"])
    assert [c.status for c in stub.calls] == [429, 429, 429]


def test_a_bad_key_fails_at_once_with_a_clear_error_and_no_secret(stub: OpenAIStub) -> None:
    secret = "sk-wrong-but-secret-1234"
    with pytest.raises(EmbeddingAuthError) as failure:
        embedder(stub, api_key=SecretStr(secret)).embed(["a"])
    message = str(failure.value)
    assert "refused the API key (401)" in message and "OPENAI_API_KEY" in message
    assert stub.base_url.removesuffix("/v1") in message
    assert secret not in message and secret not in repr(failure.value)
    assert failure.value.__cause__ is None  # the SDK's exception (with headers) is not chained
    assert [c.status for c in stub.calls] == [401]  # not retried


def test_exhausted_rate_limit_headers_pace_the_next_request(stub: OpenAIStub) -> None:
    stub.rate_limit_headers = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "400ms",
    }
    client = embedder(stub, batch_size=1)
    client.embed(["a", "b"])
    assert [c.status for c in stub.calls] == [200, 200]
    assert stub.calls[1].at - stub.calls[0].at >= 0.38


def test_unknown_model_dimensions_are_probed(stub: OpenAIStub) -> None:
    assert embedder(stub).dims == 8
    assert [c.batch_size for c in stub.calls] == [1]


def test_default_backend_choice(monkeypatch: pytest.MonkeyPatch, stub: OpenAIStub) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "EMBEDDING_MODEL"):
        monkeypatch.delenv(var, raising=False)  # the machine's own, if any
    assert isinstance(default_embedder(PlatformSettings()), MultilingualEmbedder)
    chosen = default_embedder(PlatformSettings(embedding_model="all-MiniLM-L6-v2"))
    assert isinstance(chosen, LocalEmbedder)

    chosen = default_embedder(PlatformSettings(openai_api_key=SecretStr(KEY)))
    assert isinstance(chosen, OpenAIEmbedder)
    assert (chosen.name, chosen.dims) == ("openai:text-embedding-3-small", 1536)

    chosen = default_embedder(
        PlatformSettings(
            openai_api_key=SecretStr(KEY),
            openai_base_url=stub.base_url,
            embedding_model="stub-embed",
        )
    )
    assert chosen.name == "openai:stub-embed" and chosen.dims == 8

    with pytest.raises(EmbedderUnavailable, match="EMBEDDING_MODEL='stub-embed' needs"):
        default_embedder(PlatformSettings(embedding_model="stub-embed"))


def test_embedding_max_retries_bounds_the_one_retry_layer(stub: OpenAIStub) -> None:
    settings = PlatformSettings(
        openai_base_url=stub.base_url, openai_api_key=SecretStr(KEY), embedding_max_retries=1
    )
    chosen = default_embedder(settings)
    stub.fail_next(500, times=5)
    with pytest.raises(EmbeddingError):
        chosen.embed(["a"])
    assert [c.status for c in stub.calls] == [500, 500]  # the request and one retry


SITE = "llmopenai"


@pytest.fixture
def served_by_local_model(
    stub: OpenAIStub, local_embedder: RecordingEmbedder
) -> Iterator[OpenAIStub]:
    """The stub serving the offline model's vectors, as a self-hosted server would."""
    original = stub.vectors
    stub.vectors = local_embedder.embed
    yield stub
    stub.vectors = original


def test_llm_process_and_search_on_the_openai_backend(
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    served_by_local_model: OpenAIStub,
    local_embedder: RecordingEmbedder,
) -> None:
    stub = served_by_local_model
    products = build_catalog().products[:40]
    store_job(
        es_node.url, redis_server.url, SITE, "job-1", [product_item(p, "job-1") for p in products]
    )
    remote = embedder(stub, batch_size=16)
    es = Elasticsearch(es_node.url, request_timeout=60)
    try:
        report = process_job(es, redis_server.client(), SITE, "job-1", remote)
        assert report.processed == 40 and report.chunks_written > 40
        assert index_embedder(es, chunks_index(SITE)) == ("openai:stub-embed", 384)
        assert max(c.batch_size for c in stub.calls) == 16

        target = products[7]
        hits = HybridSearch(es, remote).search(target.name, site=SITE, k=3).hits
        assert hits[0].item_key == f"{SITE}:demo_product:{target.sku}"

        # Another backend must not write into (or query) this index.
        with pytest.raises(EmbedderMismatch, match="openai:stub-embed"):
            process_job(es, redis_server.client(), SITE, "job-1", local_embedder)
    finally:
        es.indices.delete(index=f"items-{SITE}-*,{chunks_index(SITE)}", ignore_unavailable=True)
        es.close()


def test_connection_refused_is_a_clear_error() -> None:
    started = time.monotonic()
    dead = OpenAIEmbedder(
        "m", api_key="k", base_url="http://user:pw@127.0.0.1:9/v1", max_retries=0, timeout=2
    )
    with pytest.raises(EmbeddingError, match=r"cannot reach http://127.0.0.1:9/v1") as failure:
        dead.embed(["a"])
    assert "pw" not in str(failure.value)
    assert time.monotonic() - started < 5
