"""Search in the sites' languages: recall@5 per language, before and after.

    .venv/bin/python -m bench.multilingual [--languages en es pt it fr]

Starts a real Elasticsearch node, stores the catalogue of ``bench.multilingual_catalog``
once per language as that language's site (shaped as the store pipeline writes items),
runs the real LLM step (``indexing.process.process_items``) over it and asks each language's
queries through ``search.core.HybridSearch`` (BM25 + kNN, RRF), twice:

* **before**: the ``standard`` analyzer and the English offline model (all-MiniLM-L6-v2);
* **after**: the site language's analyzer and the multilingual offline model (USE
  multilingual v3).

recall@5 = the share of a query's relevant products among its top 5, averaged over the
language's queries. Prints one row per language: hybrid (what the API answers), and each
of its two lists alone (bm25, knn).
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from elasticsearch import Elasticsearch

from bench import smoke
from bench.items import store_products
from bench.multilingual_catalog import LANGUAGES, PRODUCTS, QUERIES
from crawlers.items import DemoProduct
from harness.es_node import ElasticsearchNode
from indexing.embedders import Embedder, LocalEmbedder, MultilingualEmbedder
from indexing.process import process_items
from search.core import MODES, HybridSearch, Mode

BASE_URL = "http://shop.example"
K = 5


@dataclass(frozen=True)
class Setup:
    """One way of searching: the embedder, and whether the site's language is used."""

    name: str
    embedder: Callable[[], Embedder]
    use_language: bool


SETUPS = (
    Setup("before", LocalEmbedder, use_language=False),
    Setup("after", MultilingualEmbedder, use_language=True),
)


def site_name(setup: str, language: str) -> str:
    return f"ml{setup}_{language}"


def store_catalogue(es_url: str, es: Elasticsearch, site: str, language: str) -> list[str]:
    """The catalogue in ``language`` into items-<site>-demo_product; the item keys."""
    products = (
        DemoProduct(sku=sku, url=f"{BASE_URL}/{language}/{sku}", name=name, description=text)
        for sku, texts in PRODUCTS.items()
        for name, text in [texts[language]]
    )
    return store_products(es_url, es, site, products)


def recall_at_k(
    search: HybridSearch, site: str, language: str, mode: Mode = "hybrid", k: int = K
) -> float:
    """Mean over the language's queries of the share of relevant skus in the top ``k``."""
    total = 0.0
    for query, relevant in QUERIES[language]:
        hits = search.search(query, site=site, k=k, mode=mode).hits
        found = {str(hit.item.get("sku")) for hit in hits}
        total += len(found & relevant) / len(relevant)
    return total / len(QUERIES[language])


def measure(es_url: str, setup: Setup, languages: tuple[str, ...] = LANGUAGES) -> dict[str, float]:
    """recall@5 per language for ``setup`` (one site per setup and language)."""
    es = Elasticsearch(es_url, request_timeout=120)
    embedder = setup.embedder()
    search = HybridSearch(es, embedder)
    recalls: dict[tuple[Mode, str], float] = {}
    try:
        for language in languages:
            site = site_name(setup.name, language)
            keys = store_catalogue(es_url, es, site, language)
            chosen = language if setup.use_language else None
            process_items(es, site, keys, embedder, language=chosen)
            for mode in MODES:
                recalls[mode, language] = recall_at_k(search, site, language, mode)
    finally:
        es.close()
    return recalls


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--languages", nargs="+", choices=LANGUAGES, default=list(LANGUAGES), metavar="LANG"
    )
    args = smoke.parse_args(parser, argv, languages=["en", "es"])
    languages = tuple(args.languages)
    with tempfile.TemporaryDirectory() as tmp, ElasticsearchNode(run_dir=Path(tmp)) as node:
        results = {setup.name: measure(node.url, setup, languages) for setup in SETUPS}
    queries = sum(len(QUERIES[lang]) for lang in languages)
    print(f"recall@{K}: {len(PRODUCTS)} products per language, {queries} queries")
    print(f"{'language':<10}" + "".join(f"{f'{m} {s.name}':>16}" for m in MODES for s in SETUPS))
    for language in languages:
        cells = (results[s.name][m, language] for m in MODES for s in SETUPS)
        print(f"{language:<10}" + "".join(f"{cell:>16.2f}" for cell in cells))
    print("before: standard analyzer + all-MiniLM-L6-v2 (English only)")
    print("after:  the site language's analyzer + USE multilingual v3")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
