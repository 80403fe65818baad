"""Search in the sites' languages, on the real node with the real embedders."""

from __future__ import annotations

from elasticsearch import Elasticsearch

from bench.multilingual import SETUPS, measure, store_catalogue
from core.languages import language_of, text_analyzer
from crawlers.runtime.site_language import site_language
from harness.es_node import ElasticsearchNode
from indexing.embedders import MultilingualEmbedder
from indexing.index import chunks_index
from indexing.process import process_items
from search.core import HybridSearch


def test_a_site_language_comes_from_its_profile_market() -> None:
    assert site_language("idealista") == "es"  # [fetch] accept_language = "es-ES,es;q=0.9"
    assert site_language("demo") == "en"  # the platform's default Accept-Language
    assert site_language("no_such_site") is None
    assert language_of("pt-PT,pt;q=0.9") == "pt"
    assert text_analyzer("it") == "italian"
    assert text_analyzer("de") == text_analyzer(None) == "standard"


def test_spanish_chunks_are_analysed_in_spanish(es_node: ElasticsearchNode) -> None:
    es = Elasticsearch(es_node.url, request_timeout=120)
    site = "mltest_es"
    embedder = MultilingualEmbedder()
    keys = store_catalogue(es_node.url, es, site, "es")
    process_items(es, site, keys, embedder, language="es")
    mapping = es.indices.get_mapping(index=chunks_index(site)).body
    properties = next(iter(mapping.values()))["mappings"]["properties"]
    assert properties["text"]["analyzer"] == properties["title"]["analyzer"] == "spanish"
    assert properties["vector"]["dims"] == embedder.dims == 512
    search = HybridSearch(es, embedder)
    # "de" is a stop word: the de-shedding brush is not a kitchen knife.
    top = search.search("cuchillo de cocina", site=site, k=1, mode="bm25").hits
    assert [hit.item["sku"] for hit in top] == ["knife"]
    # Plural query, singular product: the same stem.
    top = search.search("sartenes", site=site, k=1, mode="bm25").hits
    assert [hit.item["sku"] for hit in top] == ["frying_pan"]
    # By meaning alone: the toothbrush is not what wireless earphones are.
    top = search.search("auriculares inalámbricos", site=site, k=1, mode="knn").hits
    assert [hit.item["sku"] for hit in top] == ["headphones"]
    es.close()


def test_recall_at_5_in_es_pt_it_is_within_10_points_of_english(
    es_node: ElasticsearchNode,
) -> None:
    after = next(setup for setup in SETUPS if setup.name == "after")
    recalls = measure(es_node.url, after, ("en", "es", "pt", "it"))
    for language in ("es", "pt", "it"):
        for mode in ("hybrid", "bm25", "knn"):
            assert recalls[mode, language] >= recalls[mode, "en"] - 0.10, (mode, language)
    assert recalls["hybrid", "en"] >= 0.9
