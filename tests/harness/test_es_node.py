"""The Elasticsearch node the harness builds from Maven Central is real ES 9, via the client."""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path

from elasticsearch import Elasticsearch, helpers

from core.store.layout import cluster_replicas_sync
from harness.base import port_open
from harness.es_node import ElasticsearchCluster, ElasticsearchNode


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_info_reports_elasticsearch_9(es: Elasticsearch) -> None:
    info = es.info()
    # The official client refuses a server without this header; the node sends it itself.
    assert info.meta.headers["X-Elastic-Product"] == "Elasticsearch"
    version = info["version"]
    assert version["number"].startswith("9.")
    assert version["build_flavor"] == "default"
    assert version["lucene_version"].startswith("10.")
    assert info["tagline"] == "You Know, for Search"
    assert info["cluster_name"] == "platform-es"
    assert info["cluster_uuid"] not in ("", "_na_")


def test_ping_and_head_root(es: Elasticsearch, es_node: ElasticsearchNode) -> None:
    assert es.ping() is True
    request = urllib.request.Request(f"{es_node.url}/", method="HEAD")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
    with opener.open(request, timeout=5) as response:
        assert response.status == 200
        assert response.headers["X-Elastic-Product"] == "Elasticsearch"


def test_dense_vector_knn_finds_nearest(es: Elasticsearch) -> None:
    es.indices.create(
        index="vectors",
        settings={"number_of_shards": 1, "number_of_replicas": 0},
        mappings={
            "properties": {
                "name": {"type": "keyword"},
                "embedding": {
                    "type": "dense_vector",
                    "dims": 4,
                    "index": True,
                    "similarity": "cosine",
                    "index_options": {"type": "hnsw", "m": 16, "ef_construction": 64},
                },
            }
        },
    )
    docs = {
        "north": [1.0, 0.0, 0.0, 0.0],
        "east": [0.0, 1.0, 0.0, 0.0],
        "up": [0.0, 0.0, 1.0, 0.0],
        "inward": [0.0, 0.0, 0.0, 1.0],
        "north-east": [0.7, 0.7, 0.0, 0.0],
    }
    for doc_id, vector in docs.items():
        es.index(index="vectors", id=doc_id, document={"name": doc_id, "embedding": vector})
    es.indices.refresh(index="vectors")

    mapping = es.indices.get_mapping(index="vectors")["vectors"]["mappings"]
    assert mapping["properties"]["embedding"]["index_options"]["type"] == "hnsw"

    result = es.search(
        index="vectors",
        knn={
            "field": "embedding",
            "query_vector": [0.1, 0.05, 0.95, 0.0],
            "k": 2,
            "num_candidates": 10,
        },
        source=False,
    )
    hits = result["hits"]["hits"]
    assert [hit["_id"] for hit in hits][:1] == ["up"]
    assert len(hits) == 2
    assert hits[0]["_score"] > hits[1]["_score"]

    filtered = es.search(
        index="vectors",
        knn={
            "field": "embedding",
            "query_vector": [0.9, 0.8, 0.0, 0.0],
            "k": 1,
            "num_candidates": 10,
            "filter": {"term": {"name": "north"}},
        },
    )
    assert [hit["_id"] for hit in filtered["hits"]["hits"]] == ["north"]


def test_bulk_of_10000_documents_is_searchable(es: Elasticsearch) -> None:
    es.indices.create(
        index="bulk",
        settings={"number_of_shards": 1, "number_of_replicas": 0},
        mappings={"properties": {"sku": {"type": "keyword"}, "title": {"type": "text"}}},
    )
    actions = (
        {
            "_index": "bulk",
            "_id": str(i),
            "_source": {"sku": f"sku-{i:05d}", "title": f"product number {i}", "n": i},
        }
        for i in range(10_000)
    )
    indexed, errors = helpers.bulk(es, actions, chunk_size=2_000, stats_only=True)
    assert (indexed, errors) == (10_000, 0)
    es.indices.refresh(index="bulk")

    assert es.count(index="bulk")["count"] == 10_000
    term = es.search(index="bulk", query={"term": {"sku": "sku-04321"}})
    assert [hit["_id"] for hit in term["hits"]["hits"]] == ["4321"]
    match = es.search(index="bulk", query={"match": {"title": "7777"}})
    assert match["hits"]["hits"][0]["_source"]["n"] == 7777


def test_stop_frees_port_and_restart_keeps_documents(tmp_path: Path) -> None:
    node = ElasticsearchNode(run_dir=tmp_path, data_dir=tmp_path / "es-home")
    with node:
        client = Elasticsearch(node.url, request_timeout=60)
        client.index(index="kept", id="1", document={"title": "survives a restart"})
        client.indices.refresh(index="kept")
        pid = node.pid
        assert pid is not None and node.pid_path.read_text().strip() == str(pid)
    client.close()

    assert node.pid is None
    assert not node.pid_path.exists()
    assert not _pid_exists(pid)
    assert not port_open(node.host, node.port)

    with node:  # same port, same data directory
        client = Elasticsearch(node.url, request_timeout=60)
        assert client.get(index="kept", id="1")["_source"] == {"title": "survives a restart"}
        assert client.count(index="kept")["count"] == 1
        client.close()
    assert (tmp_path / "es-home" / "data").is_dir()


def test_fresh_data_directory_is_removed_on_stop(tmp_path: Path) -> None:
    node = ElasticsearchNode(run_dir=tmp_path).start()
    try:
        home = node.home
        assert home is not None and home.is_dir()
        assert home.parent == tmp_path / f"es-data-{node.port}"
    finally:
        node.stop()
    assert not home.exists()


def test_one_node_is_a_single_node_cluster_whose_indices_get_no_replica(
    es: Elasticsearch, es_node: ElasticsearchNode
) -> None:
    assert "--seed-hosts" not in es_node.command()  # single-node discovery, the default
    assert es.cluster.health()["number_of_data_nodes"] == 1
    assert cluster_replicas_sync(es) == 0  # a replica could never be allocated: yellow


def test_cluster_nodes_seed_each_other_on_loopback(tmp_path: Path) -> None:
    cluster = ElasticsearchCluster(run_dir=tmp_path, nodes=3, base_port=19200)
    assert cluster.urls == [f"http://127.0.0.1:{19200 + i}" for i in range(3)]
    assert cluster.url == ",".join(cluster.urls)
    names = ",".join(f"elasticsearch-{19200 + i}" for i in range(3))
    for i, node in enumerate(cluster.nodes):
        argv = list(node.command())
        option = {name: argv[argv.index(name) + 1] for name in argv if name.startswith("--")}
        others = [f"127.0.0.1:{19300 + j}" for j in range(3) if j != i]
        assert option["--transport-port"] == str(19300 + i)
        assert option["--seed-hosts"] == ",".join(others)
        assert option["--initial-master-nodes"] == names
        assert option["--cluster-name"] == "platform-es-cluster-19200"
        assert option["--home"] == str(tmp_path / "es-cluster-19200" / f"node-{i}")
