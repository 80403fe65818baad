"""The demo store: an aiohttp app serving the generated catalog, with test hooks.

Serves the shop's pages (home, categories, products, the reviews API, images, robots.txt,
sitemaps, ``/edge/`` edge cases) with strong ETags and Last-Modified (304 on a current
copy), and the control API under ``/__control`` (state, behaviours, reset, the access
log), never logged and disallowed by robots.txt. Rendered pages and their ETags are
cached by (revision, layout, base URL, page): the site must never be a crawl's
bottleneck.

Reads: the command line (``--seed``, ``--products``, ``--revision``, ``--layout``,
``--access-log``, ``--block-seed``). Pages, conditional requests and the control API:
docs/demo-site.md.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from email.utils import format_datetime, parsedate_to_datetime
from functools import cached_property
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlencode

from aiohttp import web

from standins import loopback
from standins.demo_site import pages
from standins.demo_site.behaviours import (
    BEHAVIOURS,
    BehaviourEngine,
    BehaviourError,
    error_response,
    malformed,
    misencoded,
    normalize,
    padded,
    unreadable,
)
from standins.demo_site.catalog import Catalog, build_catalog

HTML_PAGE = "demo_html_page"  # response flag: content behaviours may rewrite this body
VALIDATORS = "demo_validators"  # response note: the page's Validators (conditional GET)
ACCESS_LOG_LIMIT = 1_000_000
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class DemoSiteConfig:
    host: str = "127.0.0.1"
    port: int = 8000
    seed: int = 7
    products: int = 1200
    revision: int = 0
    layout: str = "v1"
    access_log: Path | None = None
    block_seed: int | None = None  # seed of the block-rate rule; defaults to ``seed``


@dataclass(frozen=True)
class Validators:
    """A page's validators: ``etag`` (quoted, strong) and ``last_modified`` (None: the
    body was rewritten by a behaviour, only its own ETag can match it)."""

    etag: str
    last_modified: dt.datetime | None

    @cached_property
    def headers(self) -> dict[str, str]:
        headers = {"ETag": self.etag}
        if self.last_modified is not None:
            headers["Last-Modified"] = format_datetime(self.last_modified, usegmt=True)
        return headers


def body_etag(body: bytes) -> str:
    """A strong entity tag: a digest of exactly these bytes."""
    return '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'


class AccessLog:
    """Every site request, in memory (bounded) and optionally appended to a JSONL file."""

    def __init__(self, path: Path | None) -> None:
        self.entries: deque[dict[str, Any]] = deque(maxlen=ACCESS_LOG_LIMIT)
        self.next_index = 0
        self._file: IO[str] | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Line-buffered so a test reading the file sees every finished request.
            self._file = path.open("a", encoding="utf-8", buffering=1)

    def record(self, entry: dict[str, Any]) -> None:
        entry["i"] = self.next_index
        self.next_index += 1
        self.entries.append(entry)
        if self._file is not None:
            self._file.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def since(self, index: int, client: str | None = None) -> list[dict[str, Any]]:
        return [
            e for e in self.entries if e["i"] >= index and (client is None or e["client"] == client)
        ]

    def clear(self) -> None:
        self.entries.clear()
        self.next_index = 0

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class SiteState:
    def __init__(self, config: DemoSiteConfig) -> None:
        if config.layout not in pages.LAYOUTS:
            raise ValueError(f"layout must be one of {pages.LAYOUTS}")
        self.config = config
        self.layout = config.layout
        self.revision = config.revision
        self.engine = BehaviourEngine(self._default_block_seed())
        self.access = AccessLog(config.access_log)
        self.log_headers = False  # whole request heads in the access log (tests of clients)
        self._catalogs: dict[int, Catalog] = {}
        self._cache: dict[tuple[Any, ...], bytes] = {}
        # Digests, cached like the pages (a rewritten body's by its page's ETag + rewrite).
        self._etags: dict[tuple[Any, ...], str] = {}
        self._newest: dict[int, dt.datetime] = {}
        self._validators: dict[tuple[Any, ...], Validators] = {}
        # Wall-clock time of the last control change that can make a page older than
        # the catalog's dates say (a layout change, a revision moved backwards).
        self.changed_at: dt.datetime | None = None
        self.catalog()  # build now, so the first request is not the slow one

    def _default_block_seed(self) -> int:
        return self.config.seed if self.config.block_seed is None else self.config.block_seed

    def catalog(self) -> Catalog:
        catalog = self._catalogs.get(self.revision)
        if catalog is None:
            catalog = build_catalog(self.config.seed, self.config.products, self.revision)
            self._catalogs[self.revision] = catalog
        return catalog

    def cached(
        self, key: tuple[Any, ...], render: Callable[[Catalog], str | bytes | None]
    ) -> bytes | None:
        full_key = (self.revision, *key)
        body = self._cache.get(full_key)
        if body is None:
            rendered = render(self.catalog())
            if rendered is None:
                return None
            body = rendered.encode("utf-8") if isinstance(rendered, str) else rendered
            self._cache[full_key] = body
        return body

    def etag(self, key: tuple[Any, ...], body: bytes) -> str:
        """The ETag of ``body``, the page ``key`` names at the current revision."""
        full_key = (self.revision, *key)
        etag = self._etags.get(full_key)
        if etag is None:
            etag = self._etags[full_key] = body_etag(body)
        return etag

    def last_modified(self, sku: str | None = None) -> dt.datetime:
        """A product's ``lastmod`` (its page, reviews and image), else the catalog's newest
        date; never before ``changed_at``."""
        catalog = self.catalog()
        date = catalog.lastmod.get(sku) if sku is not None else None
        if date is not None:
            modified = _midnight(date)
        else:
            modified = self._newest.get(self.revision) or self._newest.setdefault(
                self.revision, _midnight(max(catalog.lastmod.values()))
            )
        if self.changed_at is not None and self.changed_at > modified:
            return self.changed_at
        return modified

    def validators(self, key: tuple[Any, ...], body: bytes, sku: str | None = None) -> Validators:
        """The validators of page ``key`` (cached until the revision or dates move)."""
        full_key = (self.revision, *key)
        validators = self._validators.get(full_key)
        if validators is None:
            validators = Validators(self.etag(key, body), self.last_modified(sku))
            self._validators[full_key] = validators
        return validators

    def snapshot(self) -> dict[str, Any]:
        catalog = self.catalog()
        return {
            "seed": self.config.seed,
            "products": self.config.products,
            "revision": self.revision,
            "layout": self.layout,
            "block_seed": self.engine.seed,
            **self.engine.snapshot(),
            "catalog": {
                "product_count": len(catalog.products),
                "changed_skus": sorted(catalog.changed_skus),
                "added_skus": sorted(catalog.added_skus),
            },
            "access_log_size": self.access.next_index,
            "log_headers": self.log_headers,
            # Every Last-Modified is at least this (ISO time; None: the catalog's dates).
            "changed_at": None if self.changed_at is None else self.changed_at.isoformat(),
        }

    def apply(self, payload: Any) -> None:
        if not isinstance(payload, dict):
            raise BehaviourError("the control body must be a JSON object")
        known = {"layout", "revision", "block_seed", "behaviours", "clients", "log_headers"}
        unknown = set(payload) - known
        if unknown:
            raise BehaviourError(f"unknown control keys: {sorted(unknown)}")
        layout = payload.get("layout", self.layout)
        if layout not in pages.LAYOUTS:
            raise BehaviourError(f"layout must be one of {pages.LAYOUTS}")
        revision = payload.get("revision", self.revision)
        if not isinstance(revision, int) or isinstance(revision, bool) or revision < 0:
            raise BehaviourError("revision must be a non-negative integer")
        block_seed = payload.get("block_seed", self.engine.seed)
        if not isinstance(block_seed, int) or isinstance(block_seed, bool):
            raise BehaviourError("block_seed must be an integer")
        log_headers = payload.get("log_headers", self.log_headers)
        if not isinstance(log_headers, bool):
            raise BehaviourError("log_headers must be true or false")
        self.engine.configure(payload.get("behaviours"), payload.get("clients"))
        self._move_to(layout, revision)
        if block_seed != self.engine.seed:
            self.engine.reseed(block_seed)
        self.log_headers = log_headers

    def reset(self) -> None:
        self.engine.reset()
        self.engine.reseed(self._default_block_seed())
        self.access.clear()
        self.log_headers = False
        self._move_to(self.config.layout, self.config.revision)

    def _move_to(self, layout: str, revision: int) -> None:
        # The catalog's dates only move forward with the revision: a layout change or a
        # revision moved back (or any revision change once that happened) dates every
        # page from now, so If-Modified-Since never passes off a changed page.
        if (
            layout != self.layout
            or revision < self.revision
            or (revision != self.revision and self.changed_at is not None)
        ):
            # HTTP dates count whole seconds: each change dates pages a second later than
            # anything served before it (at worst a second or two ahead of the clock).
            now = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(seconds=1)
            previous = self.changed_at
            self.changed_at = (
                now if previous is None else max(now, previous + dt.timedelta(seconds=1))
            )
            self._validators.clear()  # their Last-Modified moved
        self.layout = layout
        self.revision = revision


STATE = web.AppKey("state", SiteState)


# -- helpers ------------------------------------------------------------------------------


def _midnight(iso_date: str) -> dt.datetime:
    return dt.datetime.combine(dt.date.fromisoformat(iso_date), dt.time(), tzinfo=dt.UTC)


def _base(request: web.Request) -> str:
    # From the Host header, so absolute URLs stay right behind a forwarding proxy, and
    # the scheme a TLS-terminating front (a CDN, harness.bot_defense) says it serves.
    forwarded = request.headers.get("X-Forwarded-Proto", "").strip().lower()
    scheme = forwarded if forwarded in ("http", "https") else request.scheme
    return f"{scheme}://{request.host}"


def _html(body: bytes, status: int = 200) -> web.Response:
    response = web.Response(body=body, status=status, content_type="text/html", charset="utf-8")
    response[HTML_PAGE] = True
    return response


def _not_found(state: SiteState) -> web.Response:
    body = pages.simple_page(state.layout, "Page not found", "We could not find that page.")
    return web.Response(text=body, status=404, content_type="text/html", charset="utf-8")


def _request_key(request: web.Request) -> str:
    params = sorted((k, v) for k, v in request.query.items() if not k.startswith("__"))
    return request.path + ("?" + urlencode(params) if params else "")


def _forced(request: web.Request) -> dict[str, dict[str, Any]]:
    """Behaviours forced by ``?__behaviour=a,b``, with ``__<param>`` values applied."""
    names = request.query.get("__behaviour")
    if not names:
        return {}
    forced = {}
    for name in filter(None, (n.strip() for n in names.split(","))):
        params = {
            key[2:]: value
            for key, value in request.query.items()
            if key.startswith("__") and key[2:] in BEHAVIOURS.get(name, {})
        }
        forced[name] = normalize(name, params)
    return forced


def _transform(
    state: SiteState, response: web.Response, transforms: list[tuple[str, dict[str, Any]]]
) -> web.Response:
    body = response.body
    assert isinstance(body, bytes)
    by_name = dict(transforms)
    text = body.decode("utf-8")
    if "unreadable" in by_name:
        text = unreadable(text)
    if "malformed_html" in by_name:
        text = malformed(text)
    data = misencoded(text) if "bad_encoding" in by_name else text.encode("utf-8")
    if "huge_page" in by_name:
        data = padded(data, by_name["huge_page"]["mb"])
    # The header keeps claiming UTF-8 even when the bytes are cp1252: that is the point.
    rewritten = web.Response(
        body=data,
        status=response.status,
        headers={"Content-Type": "text/html; charset=utf-8"},
    )
    validators = response.get(VALIDATORS)
    if isinstance(validators, Validators):
        # The ETag of the bytes served (a rewrite is deterministic: cached by the page's
        # ETag and the rewrite), no Last-Modified: the clean page's date would let an
        # If-Modified-Since pass this body off as the unchanged page.
        rewrite = json.dumps(transforms, sort_keys=True)
        rewritten[VALIDATORS] = Validators(
            state.etag(("rewrite", validators.etag, rewrite), data), None
        )
    return rewritten


_ETAG = re.compile(r'(?:W/)?"([^"]*)"')


def _not_modified(request: web.Request, validators: Validators) -> bool:
    """RFC 9110 section 13.2.2: If-None-Match (weak comparison) decides when present,
    else If-Modified-Since (GET and HEAD only)."""
    if_none_match = request.headers.getall("If-None-Match", [])
    if if_none_match:
        value = ",".join(if_none_match).strip()
        if value == "*":
            return True
        ours = validators.etag.strip('"')
        return any(tag == ours for tag in _ETAG.findall(value))
    since = request.headers.get("If-Modified-Since")
    if since is None or validators.last_modified is None or request.method not in ("GET", "HEAD"):
        return False
    try:
        date = parsedate_to_datetime(since)
    except (TypeError, ValueError):
        return False  # an invalid date is ignored (RFC 9110 section 13.1.3)
    if date.tzinfo is None:
        date = date.replace(tzinfo=dt.UTC)
    return validators.last_modified <= date


def _conditional(request: web.Request, response: web.Response) -> web.Response:
    """The validators on a 200 site answer, or 304 when the request's conditions say the
    client's copy is current."""
    validators = response.get(VALIDATORS)
    if response.status != 200 or not isinstance(validators, Validators):
        return response
    if _not_modified(request, validators):
        return web.Response(status=304, headers=validators.headers)
    response.headers.update(validators.headers)
    return response


# -- middleware: behaviours and the access log --------------------------------------------


@web.middleware
async def site_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path.startswith("/__control"):
        return await handler(request)
    state = request.app[STATE]
    client = request.headers.get("X-Demo-Client")
    applied: list[str] = []
    status, sent = 500, 0
    try:
        response = await _with_behaviours(request, handler, state, client, applied)
        status, sent = response.status, _body_bytes(request, response)
        return response
    except web.HTTPException as exc:
        status, sent = exc.status, _body_bytes(request, exc)
        raise
    finally:
        entry = {
            "ts": time.time(),
            "method": request.method,
            "path": request.path_qs,
            "status": status,
            "client": client,
            "user_agent": request.headers.get("User-Agent"),
            "behaviour": ",".join(applied) or None,
            "bytes": sent,
            "conditional": "If-None-Match" in request.headers
            or "If-Modified-Since" in request.headers,
        }
        if state.log_headers:
            entry["headers"] = [
                [name.decode("latin-1"), value.decode("latin-1")]
                for name, value in request.raw_headers
            ]
        state.access.record(entry)


def _body_bytes(request: web.Request, response: web.StreamResponse) -> int:
    """The body bytes a response sends (none for HEAD, 304 or a streamed answer)."""
    if request.method == "HEAD" or not isinstance(response, web.Response):
        return 0
    body = response.body
    return len(body) if isinstance(body, bytes | bytearray) else 0


async def _with_behaviours(
    request: web.Request,
    handler: Handler,
    state: SiteState,
    client: str | None,
    applied: list[str],
) -> web.StreamResponse:
    if "__loop" in request.query:
        # The far end of a redirect loop always points back where it came from.
        applied.append("redirect_loop")
        back = [(k, v) for k, v in request.query.items() if k != "__loop"]
        location = request.path + ("?" + urlencode(back) if back else "")
        return web.Response(status=302, headers={"Location": location})
    try:
        forced = _forced(request)
    except BehaviourError as exc:
        return web.json_response({"error": str(exc)}, status=400)
    decision = state.engine.decide(
        path=request.path,
        key=_request_key(request),
        client=client,
        forced=forced,
        base=_base(request),
    )
    applied.extend(decision.applied)
    if decision.response is not None:
        return decision.response
    if decision.delay_ms:
        await asyncio.sleep(decision.delay_ms / 1000)
    response = await handler(request)
    if not isinstance(response, web.Response):
        return response
    if decision.transforms and response.get(HTML_PAGE):
        response = _transform(state, response, decision.transforms)
    # Evaluated on the body actually served: a block or error answer (returned above)
    # never gets here, a rewritten body only matches its own ETag.
    return _conditional(request, response)


# -- site handlers ------------------------------------------------------------------------


def _validated(response: web.Response, validators: Validators) -> web.Response:
    response[VALIDATORS] = validators
    return response


def _page(
    state: SiteState,
    key: tuple[Any, ...],
    render: Callable[[Catalog], str | bytes | None],
    sku: str | None = None,
) -> tuple[bytes, Validators] | None:
    """The cached body of page ``key`` and its validators (None: no such page)."""
    body = state.cached(key, render)
    return None if body is None else (body, state.validators(key, body, sku))


async def home(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    layout, base = state.layout, _base(request)
    page = _page(state, ("home", layout, base), lambda c: pages.home(c, layout, base))
    assert page is not None
    return _validated(_html(page[0]), page[1])


async def category(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    slug = request.match_info["slug"]
    raw_page = request.query.get("page", "1")
    if not raw_page.isdigit():
        return _not_found(state)
    number = int(raw_page)
    layout, base = state.layout, _base(request)
    page = _page(
        state,
        ("category", layout, base, slug, number),
        lambda c: pages.listing(c, slug, number, layout, base),
    )
    return _not_found(state) if page is None else _validated(_html(page[0]), page[1])


async def product(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    sku = request.match_info["sku"]
    layout, base = state.layout, _base(request)
    page = _page(
        state,
        ("product", layout, base, sku),
        lambda c: pages.product_page(c, sku, layout, base),
        sku,
    )
    return _not_found(state) if page is None else _validated(_html(page[0]), page[1])


async def reviews(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    sku = request.match_info["sku"]
    page = _page(state, ("reviews", sku), lambda c: pages.reviews_json(c, sku), sku)
    if page is None:
        return web.json_response({"error": f"unknown product {sku}"}, status=404)
    response = web.Response(body=page[0], content_type="application/json", charset="utf-8")
    return _validated(response, page[1])


async def image(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    sku = request.match_info["name"].removesuffix(".svg")
    page = _page(state, ("image", sku), lambda c: pages.image_svg(c, sku), sku)
    if page is None:
        return _not_found(state)
    return _validated(web.Response(body=page[0], content_type="image/svg+xml"), page[1])


async def robots(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    base = _base(request)
    page = _page(state, ("robots", base), lambda _: pages.robots_txt(base))
    assert page is not None
    response = web.Response(body=page[0], content_type="text/plain", charset="utf-8")
    return _validated(response, page[1])


def _xml(page: tuple[bytes, Validators]) -> web.Response:
    response = web.Response(body=page[0], content_type="application/xml", charset="utf-8")
    return _validated(response, page[1])


async def sitemap_index(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    base = _base(request)
    page = _page(state, ("sitemap", base), lambda c: pages.sitemap_index(c, base))
    assert page is not None
    return _xml(page)


async def sitemap_part(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    name, base = request.match_info["name"], _base(request)
    if name == "categories.xml":
        page = _page(state, ("sitemap-c", base), lambda c: pages.categories_sitemap(c, base))
    elif name.startswith("products-") and name.endswith(".xml") and name[9:-4].isdigit():
        number = int(name[9:-4])
        page = _page(
            state, ("sitemap-p", base, number), lambda c: pages.products_sitemap(c, number, base)
        )
    else:
        page = None
    return _not_found(state) if page is None else _xml(page)


async def cart(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    layout = state.layout
    page = _page(
        state,
        ("cart", layout),
        lambda _: pages.simple_page(layout, "Your cart", "Your cart is empty."),
    )
    assert page is not None
    response = web.Response(body=page[0], content_type="text/html", charset="utf-8")
    return _validated(response, page[1])


# -- fixed edge cases ---------------------------------------------------------------------


def _first_product_page(request: web.Request) -> tuple[tuple[Any, ...], bytes]:
    """The first product's page and its cache key (an edge page's key extends it)."""
    state = request.app[STATE]
    layout, base = state.layout, _base(request)
    sku = state.catalog().products[0].sku
    key = ("product", layout, base, sku)
    body = state.cached(key, lambda c: pages.product_page(c, sku, layout, base))
    assert body is not None
    return key, body


def _edge(request: web.Request, key: tuple[Any, ...], body: bytes) -> web.Response:
    # The raw content type: the edge pages are served as they are, never rewritten again.
    state = request.app[STATE]
    response = web.Response(body=body, headers={"Content-Type": "text/html; charset=utf-8"})
    return _validated(response, state.validators(key, body))


async def edge_malformed(request: web.Request) -> web.StreamResponse:
    key, page = _first_product_page(request)
    return _edge(request, ("edge-malformed", *key), malformed(page.decode("utf-8")).encode())


async def edge_bad_encoding(request: web.Request) -> web.StreamResponse:
    key, page = _first_product_page(request)
    return _edge(request, ("edge-bad-encoding", *key), misencoded(page.decode("utf-8")))


async def edge_redirect_loop(request: web.Request) -> web.StreamResponse:
    target = "/edge/redirect-loop" if request.path.endswith("/b") else "/edge/redirect-loop/b"
    return web.Response(status=302, headers={"Location": target})


async def edge_huge(request: web.Request) -> web.StreamResponse:
    try:
        mb = min(200.0, max(0.001, float(request.query.get("mb", "20"))))
    except ValueError:
        mb = 20.0
    key, page = _first_product_page(request)
    return _edge(request, ("edge-huge", mb, *key), padded(page, mb))


async def edge_error(request: web.Request) -> web.StreamResponse:
    return error_response()


# -- control ------------------------------------------------------------------------------


async def control_get(request: web.Request) -> web.StreamResponse:
    return web.json_response(request.app[STATE].snapshot())


async def control_post(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    try:
        payload = await request.json()
    except ValueError:
        return web.json_response({"error": "the body must be JSON"}, status=400)
    try:
        state.apply(payload)
    except BehaviourError as exc:
        return web.json_response({"error": str(exc)}, status=400)
    return web.json_response(state.snapshot())


async def control_reset(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    state.reset()
    return web.json_response(state.snapshot())


async def access_log_get(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    try:
        since = int(request.query.get("since", "0"))
    except ValueError:
        return web.json_response({"error": "since must be an integer"}, status=400)
    return web.json_response(state.access.since(since, request.query.get("client")))


async def access_log_delete(request: web.Request) -> web.StreamResponse:
    request.app[STATE].access.clear()
    return web.json_response({"cleared": True})


# -- application --------------------------------------------------------------------------


def create_app(config: DemoSiteConfig) -> web.Application:
    app = web.Application(middlewares=[site_middleware])
    state = SiteState(config)
    app[STATE] = state

    async def close_log(_: web.Application) -> None:
        state.access.close()

    app.on_cleanup.append(close_log)
    app.router.add_get("/", home)
    app.router.add_get("/category/{slug}", category)
    app.router.add_get("/product/{sku}", product)
    app.router.add_get("/api/products/{sku}/reviews", reviews)
    app.router.add_get("/images/{name}", image)
    app.router.add_get("/robots.txt", robots)
    app.router.add_get("/sitemap.xml", sitemap_index)
    app.router.add_get("/sitemaps/{name}", sitemap_part)
    app.router.add_get("/cart", cart)
    app.router.add_get("/edge/malformed", edge_malformed)
    app.router.add_get("/edge/bad-encoding", edge_bad_encoding)
    app.router.add_get("/edge/redirect-loop", edge_redirect_loop)
    app.router.add_get("/edge/redirect-loop/b", edge_redirect_loop)
    app.router.add_get("/edge/huge", edge_huge)
    app.router.add_get("/edge/error", edge_error)
    app.router.add_get("/__control", control_get)
    app.router.add_post("/__control", control_post)
    app.router.add_post("/__control/reset", control_reset)
    app.router.add_get("/__control/access-log", access_log_get)
    app.router.add_delete("/__control/access-log", access_log_delete)
    return app


def run(config: DemoSiteConfig) -> None:
    """Serve until SIGTERM/SIGINT; prints the URL once the socket is listening."""
    loopback.run(
        create_app(config),
        config.host,
        config.port,
        lambda port: (
            f"Demo site ready at http://{config.host}:{port}/ "
            f"(seed={config.seed}, products={config.products}, revision={config.revision}, "
            f"layout={config.layout})"
        ),
        backlog=1024,
    )
