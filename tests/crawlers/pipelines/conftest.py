"""Fixtures shared by the crawls of the store's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from elasticsearch import Elasticsearch

from tests.crawlers.pipelines.support import clean_store_indices


@pytest.fixture
def clean_es(es: Elasticsearch) -> Iterator[Elasticsearch]:
    """The session's Elasticsearch without the demo's items and jobs, before and after."""
    clean_store_indices(es)
    yield es
    clean_store_indices(es)
