from __future__ import annotations

import pytest

from tests.indexing.support import RecordingEmbedder, shared_local_embedder


@pytest.fixture(scope="session")
def local_embedder() -> RecordingEmbedder:
    return shared_local_embedder()
