"""A local stand-in for OpenAI's API, for tests and benchmarks (aiohttp, 127.0.0.1, own thread).

``POST /v1/embeddings`` as OpenAI answers it: ``float`` or ``base64`` (little-endian
float32) ``encoding_format``, results carrying their ``index``, usage counts, and
OpenAI's error JSON. It checks the bearer key (401 ``invalid_api_key``), can fail the next
calls on purpose (429 with ``Retry-After``, 500), can send ``x-ratelimit-*`` headers,
and records every call (batch size, format, status, time) for the tests to inspect.

``POST /v1/chat/completions`` answers as a chat model would: ``chat_answer`` (set by the
test) turns the request's messages into the assistant's text, returned in OpenAI's
completion JSON; every chat request body is kept in ``chat_requests``.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from aiohttp import web

from standins import loopback

VectorFn = Callable[[Sequence[str]], list[list[float]]]
# The assistant's text for a chat request's messages.
ChatFn = Callable[[list[dict[str, Any]]], str]


def hashed_vectors(dims: int) -> VectorFn:
    """Deterministic unit vectors per text (a stand-in model for protocol tests)."""

    def vectors(texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
            vector = np.random.default_rng(seed).standard_normal(dims).astype(np.float32)
            out.append((vector / np.linalg.norm(vector)).tolist())
        return out

    return vectors


@dataclass
class Call:
    at: float  # time.monotonic() when the request arrived
    batch_size: int
    encoding_format: str  # as sent; "float" when the request left it out
    model: str
    status: int


@dataclass
class _Failure:
    status: int
    retry_after: str | None


class OpenAIStub:
    def __init__(
        self,
        *,
        api_key: str = "sk-test-key",
        vectors: VectorFn | None = None,
        dims: int = 8,
    ) -> None:
        self.api_key = api_key
        self.vectors = vectors or hashed_vectors(dims)
        self.calls: list[Call] = []
        self.rate_limit_headers: dict[str, str] = {}
        self.chat_answer: ChatFn | None = None
        self.chat_requests: list[dict[str, Any]] = []
        self._failures: list[_Failure] = []
        self._lock = threading.Lock()
        self._server: loopback.Threaded | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def fail_next(self, status: int, times: int = 1, *, retry_after: str | None = None) -> None:
        with self._lock:
            self._failures += [_Failure(status, retry_after) for _ in range(times)]

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self.chat_requests.clear()
            self._failures.clear()
            self.rate_limit_headers = {}

    # -- server --------------------------------------------------------------------------------
    async def _embeddings(self, request: web.Request) -> web.Response:
        arrived = time.monotonic()
        body: dict[str, Any] = await request.json()
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        fmt = body.get("encoding_format") or "float"
        model = str(body.get("model"))

        def record(status: int) -> None:
            with self._lock:
                self.calls.append(Call(arrived, len(texts or []), fmt, model, status))

        refused = self._unauthorized(request)
        if refused is not None:
            record(401)
            return refused
        with self._lock:
            failure = self._failures.pop(0) if self._failures else None
        if failure is not None:
            record(failure.status)
            headers = {"Retry-After": failure.retry_after} if failure.retry_after else {}
            if failure.status == 429:
                return _error(
                    429, "Rate limit reached for requests", "requests", "rate_limit_exceeded",
                    headers,
                )  # fmt: skip
            return _error(failure.status, "The server had an error", "server_error", None)
        if not isinstance(texts, list) or not texts:
            record(400)
            return _error(400, "'input' must be a non-empty list", "invalid_request_error", None)
        vectors = await asyncio.get_running_loop().run_in_executor(None, self.vectors, texts)
        data = []
        for index, vector in enumerate(vectors):
            if fmt == "base64":
                packed = np.asarray(vector, dtype="<f4").tobytes()
                embedding: Any = base64.b64encode(packed).decode()
            else:
                embedding = vector
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        data.reverse()  # clients must order by "index", not by position
        tokens = sum(len(text.split()) for text in texts)
        record(200)
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
            headers=dict(self.rate_limit_headers),
        )

    def _unauthorized(self, request: web.Request) -> web.Response | None:
        if request.headers.get("Authorization") == f"Bearer {self.api_key}":
            return None
        given = request.headers.get("Authorization", "").removeprefix("Bearer ")
        masked = f"{given[:3]}***{given[-2:]}" if len(given) > 6 else "***"
        return _error(
            401,
            f"Incorrect API key provided: {masked}. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            "invalid_api_key",
        )

    async def _chat(self, request: web.Request) -> web.Response:
        refused = self._unauthorized(request)
        if refused is not None:
            return refused
        body: dict[str, Any] = await request.json()
        with self._lock:
            self.chat_requests.append(body)
            failure = self._failures.pop(0) if self._failures else None
        if failure is not None:
            return _error(failure.status, "The server had an error", "server_error", None)
        if self.chat_answer is None or not body.get("messages"):
            return _error(400, "no chat model here", "invalid_request_error", None)
        messages = list(body["messages"])
        content = await asyncio.get_running_loop().run_in_executor(None, self.chat_answer, messages)
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages)
        completion_tokens = len(content.split())
        return web.json_response(
            {
                "id": f"chatcmpl-{len(self.chat_requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": str(body.get("model")),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content, "refusal": None},
                        "finish_reason": "stop",
                        "logprobs": None,
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            }
        )

    def start(self) -> OpenAIStub:
        app = web.Application()
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_post("/v1/chat/completions", self._chat)
        self._server = loopback.Threaded(app, "openai-stub")
        self.port = self._server.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()

    def __enter__(self) -> OpenAIStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _error(
    status: int,
    message: str,
    kind: str,
    code: str | None,
    headers: dict[str, str] | None = None,
) -> web.Response:
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return web.json_response(body, status=status, headers=headers)
