"""The sites over HTTP (the standard library's threading server).

``werkstatt``: ``/``, ``/kategorie/<slug>?seite=N``, ``/artikel/<sku>-<slug>``.
``sayings``: ``/``, ``/quotes?page=N``, ``/tag/<tag>?page=N``, ``/author/<slug>``.
The onboarding corpus (``standins.plain_sites.corpus``): each module's own paths.
Every site: ``/robots.txt``; ``GET``/``DELETE /__control/access-log`` (never logged).
"""

from __future__ import annotations

import json
import signal
import threading
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from standins.plain_sites import pages
from standins.plain_sites.site import ROBOTS, Render, number

HTML = "text/html; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
JSON = "application/json"


@dataclass
class PlainSiteConfig:
    kind: str = "werkstatt"
    host: str = "127.0.0.1"
    port: int = 8200
    seed: int = 11
    items: int = 120


def make_handler(render: Render, robots: str = ROBOTS) -> type[BaseHTTPRequestHandler]:
    log: list[dict[str, Any]] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path == "/__control/access-log":
                since = number(parse_qs(parts.query), "since") if parts.query else 0
                with lock:
                    entries = [e for e in log if e["i"] >= since]
                self._send(HTTPStatus.OK, JSON, json.dumps(entries).encode())
                return
            if parts.path == "/robots.txt":
                status, kind, body = HTTPStatus.OK, TEXT, robots
            else:
                page = render(parts.path, parse_qs(parts.query))
                status, kind = (HTTPStatus.OK, HTML) if page else (HTTPStatus.NOT_FOUND, HTML)
                body = page or pages.not_found()
            self._send(status, kind, body.encode("utf-8"))
            with lock:
                log.append({"i": len(log), "path": self.path, "status": int(status)})

        def do_DELETE(self) -> None:
            with lock:
                log.clear()
            self._send(HTTPStatus.OK, JSON, b'{"cleared": true}')

        def _send(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Silent: the access log records every request."""

    return Handler


class Server(ThreadingHTTPServer):
    daemon_threads = True


def run(config: PlainSiteConfig) -> None:
    from standins.plain_sites.corpus import build

    built = build(config.kind, config.seed, config.items)
    server = Server((config.host, config.port), make_handler(built.render, built.robots))
    port = int(server.server_address[1])
    print(f"{config.kind} ready at http://{config.host}:{port}/", flush=True)

    def stop(*_: object) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
