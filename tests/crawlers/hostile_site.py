"""A hostile shop on loopback: each way a site can make a crawl endless or unbounded.

The demo spider's shape (home -> category -> listing -> product -> reviews JSON), one case
per path prefix, so ``scrapy crawl demo -a base_url=<url>/<case>`` meets exactly one:

* ``endless``: a listing whose every page links ``?page=N+1``;
* ``links``: a listing of 100,000 product links;
* ``bigdesc``: a product whose JSON-LD description is 20 MB;
* ``brokenld``: a product page with 20,000 broken JSON-LD blocks beside its real one;
* ``deepjson``: reviews JSON of 200,000 nested ``[``;
* ``badutf8``: reviews JSON with invalid UTF-8, served without a charset;
* ``oversize``: a product page larger than the crawl's ``DOWNLOAD_MAXSIZE`` (2 MB);
  ``streamed``: the same without a Content-Length;
* ``/calendar/day/N``: a calendar whose every day links the next (the generic spider);
* ``charsetlie``: product pages in UTF-8 whose Content-Type header says ``charset=utf-16``;
* ``surrogate``: a product whose JSON-LD name holds a lone surrogate escape (``\ud800``),
  its ``<h1>`` the clean name;
* ``badprice``: a product whose JSON-LD price is negative and image a ``javascript:`` URL,
  its markup printing the price (``€9.99``) and showing no image;
* ``novalid``: a product whose only price, in its JSON-LD, is negative (nothing to fall
  back on: the item is dropped, counted);
* ``profiled``: for a profile-driven site (the generic spider), a product whose JSON-LD
  price is negative and whose microdata rates it 9 of 5, its microdata price and printed
  rating good;
* ``cookies``: a product page with 5,000 ``Set-Cookie`` headers (75 KB: Chromium reads it);
* ``bigcookie``: a product page with one 20 KB ``Set-Cookie`` header (Chromium reads it);
* ``hugeheader``: a product page with one 300 KB header (over Chromium's 256 KB);
* ``declared``: a product page whose Content-Length (3 MB) is over the crawl's cap, its
  body never sent (the server waits for the crawler to give up, and notes when it did);
* ``links404``: a listing of 1,200 product links that all answer 404;
* ``tlsproduct``: a listing linking its product over https to this plain-HTTP server, so
  every handshake fails the same way.

Every other product is a complete, valid one, so a case's lines are its own.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import re
import threading
import time
from typing import Any

CASES = (
    "endless", "links", "bigdesc", "brokenld", "deepjson", "badutf8", "oversize", "streamed",
    "charsetlie", "surrogate", "badprice", "novalid", "profiled", "cookies", "bigcookie",
    "hugeheader", "declared", "links404", "tlsproduct",
)  # fmt: skip
# Cases whose listing links two products (a line said once for both is the point).
TWO_PRODUCTS = ("charsetlie", "surrogate", "badprice", "cookies")
SET_COOKIES = 5_000
BIG_HEADER = 20 * 1024
HUGE_HEADER = 300 * 1024
DECLARED = 3 * 1024 * 1024
LINKS_404 = 1_200
LINKS = 100_000
BROKEN_BLOCKS = 20_000
NESTING = 200_000
BIG_DESCRIPTION = 20 * 1024 * 1024
OVERSIZE = 2 * 1024 * 1024

_BROKEN_BLOCK = '<script type="application/ld+json">{"broken": </script>'
_PRODUCT = re.compile(r"^/(\w+)/product/([\w-]+)$")
_REVIEWS = re.compile(r"^/(\w+)/reviews/([\w-]+)\.json$")
_LISTING = re.compile(r"^/(\w+)/category/x(?:\?page=(\d+))?$")
_DAY = re.compile(r"^/calendar/day/(\d+)$")


# Text enough that a page is not taken for a near-empty block page (core.fetch.blocks).
_FILLER = "<p>" + "A page of the hostile shop, with some words on it. " * 12 + "</p>"


def _html(body: str) -> bytes:
    return (
        f"<!doctype html><html><head><title>Hostile shop</title></head>"
        f"<body>{_FILLER}{body}</body></html>"
    ).encode()


def product_jsonld(case: str, sku: str, description: str = "A fine product.") -> str:
    return json.dumps(
        {
            "@context": "https://schema.org",
            "@type": "Product",
            "name": f"Product {sku}",
            "sku": sku,
            "brand": {"@type": "Brand", "name": "Hostile"},
            "category": "Things",
            "image": f"/{case}/img/{sku}.png",
            "description": description,
            "offers": {
                "@type": "Offer",
                "price": "9.99",
                "priceCurrency": "EUR",
                "availability": "https://schema.org/InStock",
            },
            "aggregateRating": {"@type": "AggregateRating", "ratingValue": 4.5, "reviewCount": 1},
        }
    )


# ``profiled``: microdata of the product, its price good, its rating off the 5-star scale.
_PROFILED_MICRODATA = (
    '<div itemscope itemtype="https://schema.org/Product">'
    '<meta itemprop="name" content="Product {sku}">'
    '<div itemprop="offers" itemscope itemtype="https://schema.org/Offer">'
    '<meta itemprop="price" content="12.50"><meta itemprop="priceCurrency" content="EUR">'
    '</div><div itemprop="aggregateRating" itemscope '
    'itemtype="https://schema.org/AggregateRating"><meta itemprop="ratingValue" content="9">'
    '</div></div><p class="rating-value">4.5</p>'
)


class HostileSite(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        # ``declared``: seconds each request's connection stayed open after the headers.
        self.declared_waits: list[float] = []
        self._cache: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> HostileSite:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def cached(self, key: str, build: Any) -> bytes:
        with self._lock:
            if key not in self._cache:
                self._cache[key] = build()
            return self._cache[key]

    # -- pages ---------------------------------------------------------------------------
    def page(self, path: str) -> tuple[int, str, bytes]:
        if path == "/robots.txt":
            return 200, "text/plain", b"User-agent: *\nAllow: /\n"
        case = path.strip("/").split("/", 1)[0]
        if path == f"/{case}/" and case in CASES:
            return (
                200,
                "text/html",
                _html(f'<a class="category-link" href="/{case}/category/x">x</a>'),
            )
        if match := _LISTING.match(path):
            return self.listing(match.group(1), int(match.group(2) or 1))
        if match := _PRODUCT.match(path):
            return self.product(match.group(1), match.group(2))
        if match := _REVIEWS.match(path):
            return self.reviews(match.group(1))
        if match := _DAY.match(path):
            day = int(match.group(1))
            return (
                200,
                "text/html",
                _html(f'<a class="next" href="/calendar/day/{day + 1}">next</a>'),
            )
        return 404, "text/html", _html("not found")

    def listing(self, case: str, page: int) -> tuple[int, str, bytes]:
        if case == "links404":
            missing = "".join(
                f'<a class="product-link" href="/links404/missing/{n}">{n}</a>'
                for n in range(LINKS_404)
            )
            return 200, "text/html", _html(missing)
        if case == "tlsproduct":
            https = self.url.replace("http://", "https://")
            return (
                200,
                "text/html",
                _html(f'<a class="product-link" href="{https}/{case}/product/p1">p</a>'),
            )
        if case in TWO_PRODUCTS:
            two = "".join(
                f'<a class="product-link" href="/{case}/product/p{n}">p</a>' for n in (1, 2)
            )
            return 200, "text/html", _html(two)
        if case == "links":
            body = self.cached(
                "links",
                lambda: _html(
                    "".join(
                        f'<a class="product-link" href="/links/product/{n}">{n}</a>'
                        for n in range(LINKS)
                    )
                ),
            )
            return 200, "text/html", body
        more = ""
        if case == "endless":
            more = (
                f'<nav class="pagination"><a href="/endless/category/x?page={page + 1}">n</a></nav>'
            )
        link = f'<a class="product-link" href="/{case}/product/p{page}">p</a>'
        return 200, "text/html", _html(link + more)

    def product(self, case: str, sku: str) -> tuple[int, str, bytes]:
        description = "A fine product."
        extra = ""
        if case == "bigdesc":
            description = "x" * BIG_DESCRIPTION
        elif case == "brokenld":
            extra = self.cached(
                "brokenld",
                lambda: (
                    '<script type="application/ld+json">{"broken": </script>' * BROKEN_BLOCKS
                ).encode(),
            ).decode()
        elif case in ("oversize", "streamed"):
            extra = "<!-- " + "p" * OVERSIZE + " -->"
        ld = product_jsonld(case, sku, description)
        title = f"Product {sku}"
        if case == "charsetlie":
            title = f"Caf\u00e9 cr\u00e8me {sku}"  # accents: only UTF-8 reads them right
            ld = ld.replace(f'"Product {sku}"', json.dumps(title))
        elif case == "surrogate":
            ld = ld.replace(f'"Product {sku}"', f'"Product \\ud800 {sku}"')
        elif case == "profiled":
            ld = ld.replace('"price": "9.99"', '"price": -9.99')
            ld = json.dumps({k: v for k, v in json.loads(ld).items() if k != "aggregateRating"})
            extra = _PROFILED_MICRODATA.format(sku=sku)
        elif case in ("badprice", "novalid"):
            ld = ld.replace('"price": "9.99"', '"price": -9.99')
            ld = ld.replace(f'"/{case}/img/{sku}.png"', '"javascript:alert(1)"')
            if case == "badprice":
                extra = (
                    '<div class="product-price" data-currency="EUR">'
                    '<span class="price-value">\u20ac9.99</span></div>'
                )
        body = (
            f'<nav class="breadcrumbs"><a href="/{case}/category/x">x</a></nav>'
            f'<script type="application/ld+json">{ld}</script>{extra}'
            f'<h1 class="product-title">{title}</h1>'
            f'<div data-reviews-url="/{case}/reviews/{sku}.json"></div>'
        )
        charset = "utf-16" if case == "charsetlie" else "utf-8"
        return 200, f"text/html; charset={charset}", _html(body)

    def extra_headers(self, path: str) -> list[tuple[str, str]]:
        """Headers a case's product page adds."""
        if not _PRODUCT.match(path):
            return []
        case = path.strip("/").split("/", 1)[0]
        if case == "cookies":
            return [("Set-Cookie", f"c{n}=v{n}; Path=/") for n in range(SET_COOKIES)]
        if case == "bigcookie":
            return [("Set-Cookie", "big=" + "b" * BIG_HEADER)]
        if case == "hugeheader":
            return [("X-Huge", "h" * HUGE_HEADER)]
        return []

    def reviews(self, case: str) -> tuple[int, str, bytes]:
        if case == "deepjson":
            return 200, "application/json", b"[" * NESTING
        review = {"author": "Ana", "rating": 5, "title": "ok", "body": "good", "date": "2024-01-01"}
        if case == "badutf8":
            raw = json.dumps({"reviews": [review]}).encode().replace(b"Ana", b"Jos\xe9 \xff")
            return 200, "application/json", raw  # no charset: JSON is UTF-8, these bytes are not
        return 200, "application/json; charset=utf-8", json.dumps({"reviews": [review]}).encode()


class _Handler(http.server.BaseHTTPRequestHandler):
    server: HostileSite
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        status, content_type, body = self.server.page(self.path)
        if self.path.startswith("/declared/product/"):
            self._declared_but_never_sent()
            return
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in self.server.extra_headers(self.path):
            self.send_header(name, value)
        if self.path.startswith("/streamed/"):
            # No length: the body streams until the connection closes (the crawler learns
            # its size only as it arrives).
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)  # a crawler refusing the rest (over-size) resets it

    def _declared_but_never_sent(self) -> None:
        """Headers declaring DECLARED bytes, then nothing: only a crawler that reads the
        Content-Length gives up before its timeout. How long it took is noted."""
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(DECLARED))
        self.end_headers()
        self.wfile.flush()
        started = time.monotonic()
        self.connection.settimeout(0.05)
        while time.monotonic() - started < 60:
            try:
                if self.connection.recv(1) == b"":
                    break  # the client closed the connection
            except TimeoutError:
                continue
            except OSError:
                break
        self.server.declared_waits.append(time.monotonic() - started)
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the crawl's own log is the record
