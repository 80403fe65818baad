"""The sites over HTTP (aiohttp, on ``standins.loopback``).

``werkstatt``: ``/``, ``/kategorie/<slug>?seite=N``, ``/artikel/<sku>-<slug>``.
``sayings``: ``/``, ``/quotes?page=N``, ``/tag/<tag>?page=N``, ``/author/<slug>``.
The onboarding corpus (``standins.plain_sites.corpus``): each module's own paths.
Every site: ``/robots.txt``; ``GET``/``DELETE /__control/access-log`` (never logged).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlsplit

from aiohttp import web

from standins import loopback
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


def _send(status: int, content_type: str, body: bytes) -> web.Response:
    return web.Response(status=status, body=body, headers={"Content-Type": content_type})


def create_app(render: Render, robots: str = ROBOTS) -> web.Application:
    log: list[dict[str, Any]] = []

    async def answer(request: web.Request) -> web.Response:
        if request.method == "GET":
            return get(request.raw_path)
        if request.method == "DELETE":
            log.clear()
            return _send(HTTPStatus.OK, JSON, b'{"cleared": true}')
        return loopback.unsupported(request)

    def get(target: str) -> web.Response:
        parts = urlsplit(target)
        if parts.path == "/__control/access-log":
            since = number(parse_qs(parts.query), "since") if parts.query else 0
            entries = [e for e in log if e["i"] >= since]
            return _send(HTTPStatus.OK, JSON, json.dumps(entries).encode())
        if parts.path == "/robots.txt":
            status, kind, body = HTTPStatus.OK, TEXT, robots
        else:
            page = render(parts.path, parse_qs(parts.query))
            status, kind = (HTTPStatus.OK, HTML) if page else (HTTPStatus.NOT_FOUND, HTML)
            body = page or pages.not_found()
        log.append({"i": len(log), "path": target, "status": int(status)})
        return _send(status, kind, body.encode("utf-8"))

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    loopback.server_header(app, loopback.STDLIB_PRODUCT)
    return app


def run(config: PlainSiteConfig) -> None:
    from standins.plain_sites.corpus import build

    built = build(config.kind, config.seed, config.items)
    loopback.run(
        create_app(built.render, built.robots),
        config.host,
        config.port,
        lambda port: f"{config.kind} ready at http://{config.host}:{port}/",
    )
