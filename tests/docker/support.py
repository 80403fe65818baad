"""Helpers for the docker/ tests: the compose file, its interpolation, .env.example, the
environment variables the project's code reads, and a recording HTTP server standing in
for Elasticsearch."""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.util
import json
import re
import secrets
import threading
import time
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from core.config import PlatformSettings
from tests.source import parsed

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCKER_DIR = REPO_ROOT / "docker"
COMPOSE_FILE = DOCKER_DIR / "compose.yaml"
ENV_EXAMPLE = DOCKER_DIR / ".env.example"
DOCKERFILE = DOCKER_DIR / "Dockerfile"
SAVED_OBJECTS = DOCKER_DIR / "kibana" / "saved_objects.ndjson"
# The Compose Specification's JSON schema (compose-spec/compose-spec schema/compose-spec.json),
# as redistributed in the npm package dclint@3.1.0 (schemas/compose.schema.json).
COMPOSE_SCHEMA = Path(__file__).resolve().parent / "compose-spec.schema.json"
# The project's own code (tests excluded): where environment reads are collected.
CODE_DIRS = (
    "core",
    "crawlers",
    "orchestration",
    "fingerprints",
    "harness",
    "standins",
    "indexing",
    "search",
    "docker",
)


def load_module(path: Path, name: str) -> ModuleType:
    """Import a script of docker/ (not a package) by path."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_compose() -> dict[str, Any]:
    return dict(yaml.safe_load(COMPOSE_FILE.read_text()))


# -- .env.example --------------------------------------------------------------------------

_LISTED = re.compile(r"^#?([A-Z][A-Z0-9_]*)=(.*)$")


def env_example_entries() -> dict[str, str | None]:
    """Every variable .env.example lists: ``KEY=value`` (value) and ``#KEY=`` (None)."""
    entries: dict[str, str | None] = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        match = _LISTED.match(line.strip())
        if match:
            commented = line.strip().startswith("#")
            entries[match.group(1)] = None if commented else match.group(2).strip()
    return entries


def example_environment(secret_values: bool = True) -> dict[str, str]:
    """The environment docker/.env would give compose: the example's values, secrets filled."""
    env = {key: value for key, value in env_example_entries().items() if value is not None}
    if secret_values:
        env = {key: value or secrets.token_hex(16) for key, value in env.items()}
    return env


# -- compose interpolation (the Compose Specification's rules) -----------------------------


class InterpolationError(ValueError):
    """A required variable is missing (``${VAR:?message}``) or the syntax is invalid."""


_NAME = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")


def _braced_end(text: str, start: int) -> int:
    """Index of the ``}`` closing the ``${`` at ``start`` (nested ``${...}`` allowed)."""
    depth, i = 0, start
    while i < len(text):
        if text.startswith("$$", i):
            i += 2
            continue
        if text.startswith("${", i):
            depth += 1
            i += 2
            continue
        if text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise InterpolationError(f"unclosed ${{ in {text!r}")


def interpolate(text: str, env: Mapping[str, str]) -> str:
    """``$VAR``, ``${VAR}``, ``${VAR:-d}``, ``${VAR-d}``, ``${VAR:?e}``, ``${VAR?e}``,
    ``${VAR:+r}``, ``${VAR+r}``, nested operands, ``$$`` for a literal dollar."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("${", i):
            end = _braced_end(text, i)
            out.append(_expression(text[i + 2 : end], env))
            i = end + 1
        elif text[i] == "$" and (match := _NAME.match(text, i + 1)):
            out.append(env.get(match.group(0), ""))
            i = match.end()
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _expression(body: str, env: Mapping[str, str]) -> str:
    match = _NAME.match(body)
    if not match:
        raise InterpolationError(f"invalid variable name in ${{{body}}}")
    name, rest = match.group(0), body[match.end() :]
    value = env.get(name)
    if rest == "":
        return value or ""
    for operator in (":-", ":?", ":+", "-", "?", "+"):
        if rest.startswith(operator):
            operand = rest[len(operator) :]
            empty_counts = operator.startswith(":")
            present = value is not None and (value != "" or not empty_counts)
            if operator.endswith("-"):
                return value if present else interpolate(operand, env)  # type: ignore[return-value]
            if operator.endswith("?"):
                if not present:
                    raise InterpolationError(f"{name}: {interpolate(operand, env)}")
                return value  # type: ignore[return-value]
            return interpolate(operand, env) if present else ""
    raise InterpolationError(f"unsupported expression ${{{body}}}")


def referenced_variables(text: str) -> set[str]:
    """Names of every variable an interpolated string refers to (nested ones included)."""
    names: set[str] = set()
    i = 0
    while i < len(text):
        if text.startswith("$$", i):
            i += 2
        elif text.startswith("${", i):
            end = _braced_end(text, i)
            body = text[i + 2 : end]
            match = _NAME.match(body)
            if match:
                names.add(match.group(0))
                names |= referenced_variables(body[match.end() :])
            i = end + 1
        elif text[i] == "$" and (match := _NAME.match(text, i + 1)):
            names.add(match.group(0))
            i = match.end()
        else:
            i += 1
    return names


def strings_in(node: Any) -> Iterator[str]:
    """Every string value of a loaded YAML document."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, Mapping):
        for value in node.values():
            yield from strings_in(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings_in(value)


def interpolate_document(node: Any, env: Mapping[str, str]) -> Any:
    """The document with every string interpolated (values only, as compose does)."""
    if isinstance(node, str):
        return interpolate(node, env)
    if isinstance(node, Mapping):
        return {key: interpolate_document(value, env) for key, value in node.items()}
    if isinstance(node, list):
        return [interpolate_document(value, env) for value in node]
    return node


# -- environment variables the code reads --------------------------------------------------


def settings_variables() -> set[str]:
    """PlatformSettings' fields as environment variable names (case-insensitive: upper)."""
    return {name.upper() for name in PlatformSettings.model_fields}


def _environ_reads(tree: ast.AST) -> Iterator[str]:
    def is_environ(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
            isinstance(node, ast.Name) and node.id == "environ"
        )

    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            first = node.args[0]
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                continue
            func = node.func
            # os.environ.get("X"), os.environ.setdefault("X", ...), os.getenv("X")
            if (
                isinstance(func, ast.Attribute)
                and func.attr in ("get", "setdefault", "pop")
                and is_environ(func.value)
            ) or (isinstance(func, ast.Attribute) and func.attr == "getenv"):
                yield first.value
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and is_environ(node.value)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            yield node.slice.value


@functools.cache
def code_environment_reads() -> dict[str, list[str]]:
    """``os.environ``/``os.getenv`` reads with a literal name -> the files reading it."""
    reads: dict[str, list[str]] = {}
    for directory in CODE_DIRS:
        for path in sorted((REPO_ROOT / directory).rglob("*.py")):
            tree = parsed(path.read_text(), str(path))
            for name in _environ_reads(tree):
                reads.setdefault(name, []).append(str(path.relative_to(REPO_ROOT)))
    return reads


# -- a recording HTTP server ---------------------------------------------------------------


class Recorder(ThreadingHTTPServer):
    """Answers every request (``statuses`` by path, else ``default_status``) after
    ``delay`` seconds, and records it (method, path, headers, body)."""

    def __init__(self, statuses: dict[str, int] | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict[str, Any]] = []
        self.statuses = statuses or {}
        self.default_status = 200
        self.delay = 0.0  # a slow server keeps its clients running (sampled by ps)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    @classmethod
    @contextlib.contextmanager
    def serving(cls) -> Iterator[Recorder]:
        server = cls()
        thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
        thread.start()
        try:
            yield server
        finally:
            server.shutdown()
            server.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: Recorder

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.requests.append(
            {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
        )
        time.sleep(self.server.delay)
        status = self.server.statuses.get(self.path.split("?")[0], self.server.default_status)
        payload = json.dumps({"acknowledged": True}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass
