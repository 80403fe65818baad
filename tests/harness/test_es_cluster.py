"""Three embedded Elasticsearch nodes form one cluster on loopback, and it survives a node's
loss: yellow while the node is away (reads and writes go on), green once it has rejoined."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from elasticsearch import Elasticsearch, helpers

from core.config import elasticsearch_client_kwargs
from core.store.layout import cluster_replicas_sync
from harness.es_node import ElasticsearchCluster

INDEX = "cluster-check"


@pytest.fixture
def client(es_cluster: ElasticsearchCluster) -> Iterator[Elasticsearch]:
    # Built as the platform builds its clients: from the comma-separated ELASTICSEARCH_URL.
    with Elasticsearch(**elasticsearch_client_kwargs(es_cluster.url), request_timeout=30) as es:  # type: ignore[arg-type]
        yield es
        es.indices.delete(index=INDEX, ignore_unavailable=True)


def primary_node(es: Elasticsearch, index: str) -> str:
    shards = es.cat.shards(index=index, format="json")
    return next(str(s["node"]) for s in shards if s["prirep"] == "p" and s["state"] == "STARTED")


def test_three_nodes_form_one_cluster_and_survive_the_loss_of_one(
    es_cluster: ElasticsearchCluster, client: Elasticsearch
) -> None:
    assert len(es_cluster.urls) == 3 and es_cluster.url == ",".join(es_cluster.urls)
    health = client.cluster.health()
    assert (health["status"], health["number_of_nodes"], health["number_of_data_nodes"]) == (
        "green",
        3,
        3,
    )
    # One cluster, not three one-node clusters: every node reports the same cluster uuid.
    uuids = set()
    for url in es_cluster.urls:
        with Elasticsearch(url) as node_client:
            uuids.add(node_client.info()["cluster_uuid"])
    assert len(uuids) == 1

    # auto replicas: a cluster of three data nodes gets one replica per shard.
    assert cluster_replicas_sync(client) == 1
    client.indices.create(index=INDEX, settings={"number_of_shards": 1, "number_of_replicas": 1})
    docs = ({"_index": INDEX, "_id": str(n), "n": n} for n in range(200))
    assert helpers.bulk(client, docs, refresh=True)[0] == 200
    es_cluster.wait_for(status="green", nodes=3, timeout=60)
    copies = client.cat.shards(index=INDEX, format="json")
    assert sorted(s["prirep"] for s in copies) == ["p", "r"]
    assert len({s["node"] for s in copies}) == 2  # primary and replica on different nodes

    # Stop the node holding the primary: its replica is promoted, the lost copy is unassigned.
    victim = [node.name for node in es_cluster.nodes].index(primary_node(client, INDEX))
    es_cluster.stop_node(victim)
    try:
        es_cluster.wait_for(status="yellow", nodes=2, timeout=60)
        assert client.count(index=INDEX)["count"] == 200
        more = ({"_index": INDEX, "_id": str(n), "n": n} for n in range(200, 250))
        assert helpers.bulk(client, more, refresh=True)[0] == 50
        assert client.get(index=INDEX, id="249")["_source"] == {"n": 249}
        assert client.count(index=INDEX)["count"] == 250
        assert client.cluster.health()["status"] == "yellow"
    finally:
        es_cluster.start_node(victim)  # waits for three nodes and green

    health = client.cluster.health()
    assert (health["status"], health["number_of_nodes"]) == ("green", 3)
    assert client.count(index=INDEX)["count"] == 250
    copies = client.cat.shards(index=INDEX, format="json")
    assert sorted(s["state"] for s in copies) == ["STARTED", "STARTED"]
