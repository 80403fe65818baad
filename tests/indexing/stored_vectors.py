"""Vectors of the demo catalog's chunks, computed once by each offline model and kept
in the repository, so the suite does not spend minutes of CPU re-embedding the same
2,273 texts on every run.

The search and indexing fixtures store the demo catalog (``build_catalog()``) and run it
through ``process_job``; every chunk text they embed is looked up here first. A file
holds the texts themselves and their vectors (float16: the rounding is far below what a
ranking notices), one file per model, named by the model. Kept honest by tests:
``tests/indexing/test_stored_vectors.py`` re-embeds a sample with the installed model and
compares, and the search fixtures assert that no catalog text missed the file. After a
change of the catalog, the item text or a model, rewrite the files:

    make test-vectors

(which runs the search package in one process with ``WRITE_STORED_VECTORS=1``: its
fixtures embed everything live and write what they embedded here.)
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

DIRECTORY = Path(__file__).resolve().parent / "vectors"
# Set by `make test-vectors`: embed live, then write the files.
WRITE_VARIABLE = "WRITE_STORED_VECTORS"


def writing() -> bool:
    return os.environ.get(WRITE_VARIABLE, "") not in ("", "0")


def path_of(model: str, directory: Path = DIRECTORY) -> Path:
    """The file of ``model`` (an embedder's ``name``, e.g. ``local:<file id>``)."""
    slug = re.sub(r"[^A-Za-z0-9.-]+", "-", model).strip("-")
    return directory / f"{slug}.npz"


class StoredVectors:
    """The kept vectors of one model: text -> vector, read-only."""

    def __init__(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        if len(texts) != len(vectors):
            raise ValueError(f"{len(texts)} texts for {len(vectors)} vectors")
        self.texts = tuple(texts)
        self._rows = {text: row for row, text in enumerate(self.texts)}
        self._vectors = vectors

    def __len__(self) -> int:
        return len(self.texts)

    def __contains__(self, text: object) -> bool:
        return text in self._rows

    def get(self, texts: Iterable[str]) -> dict[str, list[float]]:
        """The kept vectors of those of ``texts`` the file holds."""
        found = [t for t in texts if t in self._rows]
        rows = self._vectors[[self._rows[t] for t in found]].astype(np.float32)
        return dict(zip(found, rows.tolist(), strict=True))

    @classmethod
    def load(cls, model: str, directory: Path = DIRECTORY) -> StoredVectors | None:
        """The file of ``model``; None when there is none (every text is embedded live)."""
        path = path_of(model, directory)
        if not path.exists():
            return None
        with np.load(path) as data:
            texts = json.loads(data["texts_json"].tobytes().decode("utf-8"))
            return cls(texts, data["vectors"])

    @staticmethod
    def write(
        model: str, vectors: Mapping[str, Sequence[float]], directory: Path = DIRECTORY
    ) -> Path:
        """Write ``vectors`` (text -> vector) as the file of ``model``, sorted by text so a
        rewrite of the same vectors is the same file."""
        texts = sorted(vectors)
        matrix = np.array([vectors[t] for t in texts], dtype=np.float16)
        blob = np.frombuffer(json.dumps(texts, ensure_ascii=False).encode("utf-8"), np.uint8)
        path = path_of(model, directory)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(path, texts_json=blob, vectors=matrix)
        return path
