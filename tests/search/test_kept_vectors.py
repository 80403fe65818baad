"""The search fixtures embed the demo catalog from the vectors kept in the repository
(tests/indexing/stored_vectors.py); a catalog text missing there would be embedded live,
correct but minutes slower, so it fails here naming the fix."""

from __future__ import annotations

import pytest

from tests.indexing import stored_vectors
from tests.search.conftest import SearchableDemo

pytestmark = pytest.mark.skipif(
    stored_vectors.writing(), reason="make test-vectors embeds everything live on purpose"
)


def _assert_kept(demo: SearchableDemo) -> None:
    assert demo.report.chunks_embedded > 2000
    assert demo.embedded_live == 0, (
        f"{demo.embedded_live} of the {demo.report.chunks_embedded} chunk texts of "
        f"{demo.site} were not kept: run `make test-vectors`"
    )


def test_the_english_catalog_is_embedded_from_the_kept_vectors(
    searchable_demo: SearchableDemo,
) -> None:
    _assert_kept(searchable_demo)


def test_the_multilingual_catalog_is_embedded_from_the_kept_vectors(
    multilingual_demo: SearchableDemo,
) -> None:
    _assert_kept(multilingual_demo)
