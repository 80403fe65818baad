"""The jobs board over HTTP (aiohttp, on ``standins.loopback``).

Site: ``/``, ``/jobs/<category>?page=N``, ``/job/<job_id>-<slug>``, ``/company/<slug>``,
``/apply/<job_id>`` (disallowed by robots.txt), ``/robots.txt``, ``/sitemap_index.xml``,
``/sitemaps/jobs-<n>.xml``, ``/sitemaps/companies.xml``; anything else is a 404 page.
Absolute URLs (JSON-LD, sitemaps, canonical links) are built from the Host header, so the
board is right on whatever port or behind whatever forwarding proxy it is reached.

Control (never logged, disallowed by robots.txt):

- ``GET /__control/access-log?since=N``: the access log as a JSON list (per request:
  ``i``, ``ts``, ``method``, ``path``, ``status``, ``bytes``: the body bytes sent,
  ``user_agent``); ``DELETE`` clears it.

Every rendered page is cached by (base URL, page), so the board never slows a crawl.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections import deque
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qs, urlsplit

from aiohttp import web

from standins import loopback
from standins.job_board_site import pages
from standins.job_board_site.board import Board, build_board

ACCESS_LOG_LIMIT = 1_000_000
HTML = "text/html; charset=utf-8"
XML = "application/xml; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
JSON = "application/json"

_JOB = re.compile(r"/job/(J-\d+)-([a-z0-9-]+)")
_LISTING = re.compile(r"/jobs/([a-z0-9-]+)")
_COMPANY = re.compile(r"/company/([a-z0-9-]+)")
_APPLY = re.compile(r"/apply/(J-\d+)")
_JOBS_SITEMAP = re.compile(r"/sitemaps/jobs-(\d+)\.xml")


@dataclass
class JobBoardSiteConfig:
    host: str = "127.0.0.1"
    port: int = 8100
    seed: int = 7
    jobs: int = 300
    access_log: Path | None = None


class AccessLog:
    """Every site request, in memory (bounded) and optionally appended to a JSONL file."""

    def __init__(self, path: Path | None) -> None:
        self.entries: deque[dict[str, Any]] = deque(maxlen=ACCESS_LOG_LIMIT)
        self.next_index = 0
        self._lock = threading.Lock()
        self._file: IO[str] | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Line-buffered so a test reading the file sees every finished request.
            self._file = path.open("a", encoding="utf-8", buffering=1)

    def record(self, entry: dict[str, Any]) -> None:
        with self._lock:  # one thread per connection: indexes and lines stay in order
            entry["i"] = self.next_index
            self.next_index += 1
            self.entries.append(entry)
            if self._file is not None:
                self._file.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def since(self, index: int) -> list[dict[str, Any]]:
        with self._lock:
            return [entry for entry in self.entries if entry["i"] >= index]

    def clear(self) -> None:
        with self._lock:
            self.entries.clear()
            self.next_index = 0

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


class JobBoard:
    """The board's data, its page cache and its access log (shared by every thread)."""

    def __init__(self, config: JobBoardSiteConfig) -> None:
        self.config = config
        self.board: Board = build_board(config.seed, config.jobs)
        self.access = AccessLog(config.access_log)
        self._cache: dict[tuple[Any, ...], tuple[int, str, bytes]] = {}

    def page(self, base: str, path: str, query: str) -> tuple[int, str, bytes]:
        """Status, content type and body of a site page (cached when it exists)."""
        key = (base, path, query)
        answer = self._cache.get(key)
        if answer is None:
            answer = self._render(base, path, query)
            # Pages only: made-up URLs must not grow the cache. A lost race between two
            # threads renders the same bytes twice: harmless.
            if answer[0] == HTTPStatus.OK:
                self._cache[key] = answer
        return answer

    def _render(self, base: str, path: str, query: str) -> tuple[int, str, bytes]:
        board = self.board
        body: str | None = None
        content_type = HTML
        if path == "/":
            body = pages.home(board)
        elif path == "/robots.txt":
            body, content_type = pages.robots_txt(base), TEXT
        elif path == "/sitemap_index.xml":
            body, content_type = pages.sitemap_index(board, base), XML
        elif path == "/sitemaps/companies.xml":
            body, content_type = pages.companies_sitemap(board, base), XML
        elif match := _JOBS_SITEMAP.fullmatch(path):
            body, content_type = pages.job_board_sitemap(board, int(match[1]), base), XML
        elif match := _LISTING.fullmatch(path):
            number = parse_qs(query).get("page", ["1"])[-1]
            if number.isdigit():
                body = pages.listing(board, match[1], int(number))
        elif match := _JOB.fullmatch(path):
            body = pages.job_page(board, match[1], match[2], base)
        elif match := _COMPANY.fullmatch(path):
            body = pages.company_page(board, match[1], base)
        elif match := _APPLY.fullmatch(path):
            body = pages.apply_page(board, match[1])
        if body is None:
            return HTTPStatus.NOT_FOUND, HTML, pages.not_found().encode("utf-8")
        return HTTPStatus.OK, content_type, body.encode("utf-8")


def _send(status: int, content_type: str, body: bytes) -> web.Response:
    # To a HEAD aiohttp sends the headers only, Content-Length the body's.
    return web.Response(status=status, body=body, headers={"Content-Type": content_type})


def create_app(site: JobBoard) -> web.Application:
    async def answer(request: web.Request) -> web.Response:
        if request.method in ("GET", "HEAD"):
            return serve_page(request)
        if request.method == "DELETE":
            if urlsplit(request.raw_path).path == "/__control/access-log":
                site.access.clear()
                return _send(HTTPStatus.OK, JSON, b'{"cleared": true}')
            return _send(HTTPStatus.METHOD_NOT_ALLOWED, TEXT, b"method not allowed\n")
        return loopback.unsupported(request)

    def serve_page(request: web.Request) -> web.Response:
        parts = urlsplit(request.raw_path)
        if parts.path.startswith("/__control"):
            return control(parts.path, parts.query)
        # From the Host header, so absolute URLs stay right behind a forwarding proxy.
        host = request.headers.get("Host") or _listening(request)
        status, content_type, body = site.page(f"http://{host}", parts.path, parts.query)
        site.access.record(
            {
                "ts": time.time(),
                "method": request.method,
                "path": request.raw_path,
                "status": int(status),
                "bytes": 0 if request.method == "HEAD" else len(body),
                "user_agent": request.headers.get("User-Agent"),
            }
        )
        return _send(status, content_type, body)

    def control(path: str, query: str) -> web.Response:
        if path != "/__control/access-log":
            return _send(HTTPStatus.NOT_FOUND, JSON, b'{"error": "no such control"}')
        since = parse_qs(query).get("since", ["0"])[-1]
        if not since.isdigit():
            return _send(HTTPStatus.BAD_REQUEST, JSON, b'{"error": "since: integer"}')
        body = json.dumps(site.access.since(int(since)), ensure_ascii=False).encode()
        return _send(HTTPStatus.OK, JSON, body)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    loopback.server_header(app, "Jobboard/1.0")
    return app


def _listening(request: web.Request) -> str:
    """host:port of the socket the request came in on (a request without a Host header)."""
    transport = request.transport
    host, port = transport.get_extra_info("sockname")[:2] if transport else ("127.0.0.1", 0)
    return f"{host}:{port}"


class CannotListen(Exception):
    """The address is taken or not ours: an operator's mistake, named with its fix."""


def run(config: JobBoardSiteConfig) -> None:
    """Serve until SIGTERM/SIGINT; prints the URL once the socket is listening."""
    site = JobBoard(config)
    try:
        loopback.run(
            create_app(site),
            config.host,
            config.port,
            lambda port: (
                f"Jobs board ready at http://{config.host}:{port}/ "
                f"(seed={config.seed}, jobs={config.jobs})"
            ),
            backlog=1024,
        )
    except OSError as exc:
        raise CannotListen(
            f"cannot listen on {config.host}:{config.port} "
            f"({os.strerror(exc.errno) if exc.errno else exc}); "
            "pick another --port (0: any free one)"
        ) from None
    finally:
        site.access.close()
