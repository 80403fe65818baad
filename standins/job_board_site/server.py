"""The jobs board over HTTP: the standard library's threading server, no framework.

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
import re
import signal
import threading
import time
from collections import deque
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qs, urlsplit

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


def make_handler(site: JobBoard) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: a crawler reuses its connections
        server_version = "Jobboard/1.0"

        def do_GET(self) -> None:
            self._serve(head=False)

        def do_HEAD(self) -> None:
            self._serve(head=True)

        def do_DELETE(self) -> None:
            if urlsplit(self.path).path == "/__control/access-log":
                site.access.clear()
                self._send(HTTPStatus.OK, JSON, b'{"cleared": true}', head=False)
            else:
                self._send(HTTPStatus.METHOD_NOT_ALLOWED, TEXT, b"method not allowed\n", False)

        def _serve(self, head: bool) -> None:
            parts = urlsplit(self.path)
            if parts.path.startswith("/__control"):
                self._control(parts.path, parts.query, head)
                return
            # From the Host header, so absolute URLs stay right behind a forwarding proxy.
            host = self.headers.get("Host") or f"{self.server.server_address[0]}:{self.port}"
            status, content_type, body = site.page(f"http://{host}", parts.path, parts.query)
            self._send(status, content_type, body, head)
            site.access.record(
                {
                    "ts": time.time(),
                    "method": self.command,
                    "path": self.path,
                    "status": int(status),
                    "bytes": 0 if head else len(body),
                    "user_agent": self.headers.get("User-Agent"),
                }
            )

        @property
        def port(self) -> int:
            return int(self.server.server_address[1])

        def _control(self, path: str, query: str, head: bool) -> None:
            if path != "/__control/access-log":
                self._send(HTTPStatus.NOT_FOUND, JSON, b'{"error": "no such control"}', head)
                return
            since = parse_qs(query).get("since", ["0"])[-1]
            if not since.isdigit():
                self._send(HTTPStatus.BAD_REQUEST, JSON, b'{"error": "since: integer"}', head)
                return
            body = json.dumps(site.access.since(int(since)), ensure_ascii=False).encode()
            self._send(HTTPStatus.OK, JSON, body, head)

        def _send(self, status: int, content_type: str, body: bytes, head: bool) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Silent: the access log records every request (stderr would flood the log)."""

    return Handler


class CannotListen(Exception):
    """The address is taken or not ours: an operator's mistake, named with its fix."""


class Server(ThreadingHTTPServer):
    daemon_threads = True  # a kept-alive connection never holds up the shutdown
    request_queue_size = 1024


def run(config: JobBoardSiteConfig) -> None:
    """Serve until SIGTERM/SIGINT; prints the URL once the socket is listening."""
    site = JobBoard(config)
    try:
        server = Server((config.host, config.port), make_handler(site))
    except OSError as exc:
        site.access.close()
        raise CannotListen(
            f"cannot listen on {config.host}:{config.port} ({exc.strerror or exc}); "
            "pick another --port (0: any free one)"
        ) from None
    port = int(server.server_address[1])
    print(
        f"Jobs board ready at http://{config.host}:{port}/ "
        f"(seed={config.seed}, jobs={config.jobs})",
        flush=True,
    )

    def stop(*_: object) -> None:
        # shutdown() waits for serve_forever to return: never from its own thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        site.access.close()
