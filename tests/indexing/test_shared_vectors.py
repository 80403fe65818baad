"""The suite's shared vectors (tests/indexing/support.py): workers of one run embed a text
once between them, and each still gets exactly the vectors its model makes."""

from __future__ import annotations

from pathlib import Path

from tests.indexing.support import (
    CountingModel,
    RecordingEmbedder,
    SharedVectors,
    shared_vectors,
)


def test_a_text_embedded_by_one_worker_is_read_by_the_other(tmp_path: Path) -> None:
    store = shared_vectors(tmp_path, "counting")
    assert isinstance(store, SharedVectors)
    first_model, second_model = CountingModel(), CountingModel()
    first = RecordingEmbedder(first_model, store)
    second = RecordingEmbedder(second_model, SharedVectors(store.path))  # another process's
    texts = ["a knife", "a kettle", "ein Messer"]
    assert first.embed(texts) == CountingModel().embed(texts)
    assert second.embed([*texts, "une bouilloire"]) == CountingModel().embed(
        [*texts, "une bouilloire"]
    )
    assert sorted(first_model.asked) == sorted(texts)
    assert second_model.asked == ["une bouilloire"]  # only what nobody had embedded
    assert (first.texts, second.texts) == (3, 4)  # what each was asked for, all counted


def test_models_do_not_share_vectors(tmp_path: Path) -> None:
    one, other = shared_vectors(tmp_path, "model-a"), shared_vectors(tmp_path, "model-b")
    assert one is not None and other is not None and one.path != other.path
    assert shared_vectors(None, "model-a") is None  # outside xdist: nothing shared
