"""The demo catalog's vectors kept in the repository (tests/indexing/stored_vectors.py):
served instead of the model, and still exactly what the installed models make."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from indexing.embedders import Embedder, LocalEmbedder
from indexing.multilingual import MultilingualEmbedder
from tests.indexing.stored_vectors import DIRECTORY, StoredVectors, path_of
from tests.indexing.support import CountingModel, RecordingEmbedder


def test_kept_texts_are_served_without_the_model_and_the_rest_are_embedded(
    tmp_path: Path,
) -> None:
    model = CountingModel("local:counting-v1")
    kept_texts = ["a knife", "a kettle"]
    kept = dict(zip(kept_texts, CountingModel().embed(kept_texts), strict=True))
    path = StoredVectors.write(model.name, kept, tmp_path)
    assert path == path_of(model.name, tmp_path) and path.name == "local-counting-v1.npz"
    stored = StoredVectors.load(model.name, tmp_path)
    assert stored is not None and len(stored) == 2 and "a knife" in stored
    embedder = RecordingEmbedder(model, stored=stored)
    texts = ["a kettle", "ein Messer", "a knife", "ein Messer"]
    assert embedder.embed(texts) == CountingModel().embed(texts)
    assert model.asked == ["ein Messer"]  # only what the file does not hold, once
    assert (embedder.texts, embedder.computed) == (4, 1)


def test_no_file_means_every_text_is_embedded(tmp_path: Path) -> None:
    assert StoredVectors.load("local:never-kept", tmp_path) is None
    with pytest.raises(ValueError, match="2 texts for 1 vectors"):
        StoredVectors(["a", "b"], np.zeros((1, 3), np.float16))


MODELS: dict[str, Callable[[], Embedder]] = {
    "minilm": lambda: LocalEmbedder(threads=1),
    "multilingual": lambda: MultilingualEmbedder(),
}


@pytest.mark.integration  # loads both models: seconds of CPU the fast tier has no room for
@pytest.mark.parametrize("model", sorted(MODELS))
def test_kept_vectors_are_what_the_installed_model_makes(model: str) -> None:
    embedder = MODELS[model]()
    stored = StoredVectors.load(embedder.name)
    assert stored is not None, (
        f"no kept vectors for {embedder.name} in {DIRECTORY}: run `make test-vectors`"
    )
    assert len(stored) > 2000  # the demo catalog's chunks at least
    sample = random.Random(len(stored)).sample(stored.texts, 6)
    found = stored.get(sample)
    kept = np.array([found[t] for t in sample])
    live = np.array(embedder.embed(sample))
    cosine = (kept * live).sum(axis=1) / (
        np.linalg.norm(kept, axis=1) * np.linalg.norm(live, axis=1)
    )
    assert cosine.min() > 0.999, (
        f"kept vectors of {embedder.name} differ from the installed model's "
        f"(cosine {cosine.min():.4f}): run `make test-vectors`"
    )
