"""``HybridSearch``'s requests to Elasticsearch: a query costs its embedding and two round
trips once the site's embedder is known (the lists in one ``_msearch``, then the items of
that site), a site deleted meanwhile is unknown at once, and each result says where its
time went. Counted at the HTTP boundary of the real client (its ``node_class``) against the
indexed demo catalog."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from elastic_transport import Urllib3HttpNode
from elasticsearch import BadRequestError, Elasticsearch

from indexing.index import chunks_index, ensure_chunks_index
from search.core import HybridSearch, UnknownSite
from tests.indexing.support import RecordingEmbedder
from tests.search.conftest import SearchableDemo

QUERY = "waterproof head torch, 900 lumens, green, for jobs around the tent at night"
SKU = "DM-00050"


class CountingNode(Urllib3HttpNode):
    """A node of the real client that records each request's method and path."""

    requests: list[str] = []

    def perform_request(self, method: str, target: str, *args: Any, **kwargs: Any) -> Any:
        CountingNode.requests.append(f"{method} {target.split('?')[0]}")
        return super().perform_request(method, target, *args, **kwargs)


@pytest.fixture
def counted(searchable_demo: SearchableDemo) -> Iterator[Elasticsearch]:
    url = searchable_demo.es.transport.node_pool.get().base_url
    es = Elasticsearch(url, node_class=CountingNode, request_timeout=60)
    CountingNode.requests = []
    yield es
    es.close()


def requests_of(search: HybridSearch, **kwargs: Any) -> list[str]:
    CountingNode.requests = []
    result = search.search(QUERY, site="searchdemo", k=5, **kwargs)
    assert len(result.hits) == 5 and all(hit.item.get("sku") for hit in result.hits)
    if result.mode != "bm25":  # the paraphrase is found by meaning (BM25 ranks it 14th)
        assert SKU in {hit.item.get("sku") for hit in result.hits}
    return list(CountingNode.requests)


def test_a_query_is_two_round_trips_once_the_site_is_known(
    counted: Elasticsearch, local_embedder: RecordingEmbedder
) -> None:
    search = HybridSearch(counted, local_embedder)
    first = requests_of(search)
    assert first == [
        "GET /chunks-searchdemo/_mapping",
        "POST /_msearch",
        "POST /items-searchdemo/_search",
    ]
    assert requests_of(search) == first[1:]
    assert requests_of(search, mode="bm25") == first[1:]
    assert requests_of(search, mode="knn") == first[1:]


def test_the_site_embedder_is_read_again_after_its_time(
    counted: Elasticsearch, local_embedder: RecordingEmbedder
) -> None:
    search = HybridSearch(counted, local_embedder, metadata_ttl=0.0)
    assert requests_of(search)[0] == "GET /chunks-searchdemo/_mapping"
    assert requests_of(search)[0] == "GET /chunks-searchdemo/_mapping"


def test_a_deleted_site_is_unknown_at_once(
    searchable_demo: SearchableDemo, counted: Elasticsearch, local_embedder: RecordingEmbedder
) -> None:
    search = HybridSearch(counted, local_embedder)
    es = searchable_demo.es
    # A site's (empty) chunks index, deleted after its first search.
    ensure_chunks_index(es, "searchgone", local_embedder)
    assert search.search(QUERY, site="searchgone", k=5).hits == []
    es.indices.delete(index=chunks_index("searchgone"))
    with pytest.raises(UnknownSite, match="searchgone"):
        search.search(QUERY, site="searchgone", k=5)
    CountingNode.requests = []
    with pytest.raises(UnknownSite, match="searchgone"):
        search.search(QUERY, site="searchgone", k=5)
    assert CountingNode.requests == ["GET /chunks-searchgone/_mapping"]  # looked up again


def test_each_result_says_where_its_time_went(
    counted: Elasticsearch, local_embedder: RecordingEmbedder
) -> None:
    search = HybridSearch(counted, local_embedder)
    hybrid = search.search(QUERY, site="searchdemo", k=5)
    assert set(hybrid.timings_ms) == {"embed", "lists", "items"}
    assert all(ms >= 0 for ms in hybrid.timings_ms.values())
    assert sum(hybrid.timings_ms.values()) <= hybrid.took_ms + 0.5  # rounded to 0.1 ms each
    bm25 = search.search(QUERY, site="searchdemo", k=5, mode="bm25")
    assert set(bm25.timings_ms) == {"lists", "items"}  # nothing embedded


def test_a_failed_list_is_raised_as_the_client_raises_elasticsearchs_errors(
    counted: Elasticsearch, local_embedder: RecordingEmbedder
) -> None:
    class WrongLength:
        """The index's embedder by name, but a vector the index cannot take."""

        name, dims = local_embedder.name, local_embedder.dims

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            return [[0.5, 0.5, 0.5] for _ in texts]

    search = HybridSearch(counted, WrongLength())
    with pytest.raises(BadRequestError) as failed:
        search.search(QUERY, site="searchdemo", k=5)
    assert failed.value.meta.status == 400 and "exception" in failed.value.message
    # BM25 alone still answers: the failure was the kNN list's.
    assert len(search.search(QUERY, site="searchdemo", k=5, mode="bm25").hits) == 5
