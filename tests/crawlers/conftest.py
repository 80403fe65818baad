from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.crawlers.support import stop_leftover_workers


@pytest.fixture(autouse=True)
def no_crawl_outlives_its_test() -> Iterator[None]:
    """A crawl a failed test left running would take the next test's work from the same
    Redis (seen on CI: a bench run found its pages fetched by another test's worker)."""
    yield
    stop_leftover_workers()
