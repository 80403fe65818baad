"""The embedding errors, shared by every backend module (``indexing.embedders`` re-exports them)."""

from __future__ import annotations


class EmbeddingError(RuntimeError):
    """Embeddings could not be computed (the message is safe to log: no secrets)."""


class EmbeddingAuthError(EmbeddingError):
    """The endpoint refused the API key (401/403)."""


class EmbedderUnavailable(EmbeddingError):
    """The chosen backend cannot run here (e.g. the offline model is not installed)."""
