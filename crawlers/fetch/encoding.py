"""A page's encoding as a browser decides it, and named when its declaration lied.

``browser_encoding`` keeps a declaration (BOM, the Content-Type charset, the ``<meta>``
charset) only when the body is in it, else detects UTF-8 or cp1252, as a browser does;
``EncodingRepairMiddleware`` re-decodes a response whose encoding changes this way,
counted ``responses/encoding_repaired`` and named in one WARNING per host and lying
declaration. A page that declares nothing is left to Scrapy's own detection.

Reads: the response's headers and body. The order and its rules: docs/fetching.md
"Encodings".
"""

from __future__ import annotations

import codecs
import logging
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from scrapy.crawler import Crawler
from scrapy.http import Request, Response, TextResponse
from w3lib.encoding import html_body_declared_encoding, http_content_type_encoding, read_bom

logger = logging.getLogger(__name__)

_UTF8_MULTIBYTE = re.compile(rb"[\xc2-\xf4][\x80-\xbf]")
_PROBE_BYTES = 256 * 1024  # a non-UTF-8 declaration is checked on the body's head


@dataclass(frozen=True)
class Decision:
    encoding: str  # a Python codec name
    source: str  # "bom", "header", "meta" or "detected"
    # The declarations the body is not in: (where, charset), e.g. ("header", "utf-16").
    refused: tuple[tuple[str, str], ...] = field(default=())


def canonical(encoding: str) -> str:
    """Python's name of a codec; UTF-16/32 without an endianness little-endian, as browsers
    read them when no byte order mark says otherwise (a BOM is decided on first)."""
    name = _codec(encoding)
    return {"utf-16": "utf-16-le", "utf-32": "utf-32-le"}.get(name, name)


def _codec(encoding: str) -> str:
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        return encoding.lower()


def misdeclared_cp1252(body: bytes) -> bool:
    """Invalid UTF-8 with no trace of real UTF-8 in it, but valid cp1252."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        return False
    if _UTF8_MULTIBYTE.search(body):
        return False
    try:
        body.decode("cp1252")
    except UnicodeDecodeError:
        return False
    return True


def decodes(body: bytes, encoding: str) -> bool:
    """Whether ``body`` is in ``encoding``: it decodes strictly (UTF-8 in full, any other
    on its first 256 KB), and an ASCII-incompatible encoding (UTF-16, UTF-32) finds the
    NUL bytes that its ASCII characters (all of HTML's markup) always carry."""
    name = canonical(encoding)
    if name.startswith(("utf-16", "utf-32")) and b"\x00" not in body[:_PROBE_BYTES]:
        return False
    try:
        if name == "utf-8":
            body.decode("utf-8")
        else:
            decoder = codecs.getincrementaldecoder(name)("strict")
            decoder.decode(body[:_PROBE_BYTES], final=len(body) <= _PROBE_BYTES)
    except (UnicodeError, LookupError):
        return False
    return True


def detected(body: bytes) -> str:
    """UTF-8 unless the body is a cp1252 page (``misdeclared_cp1252``)."""
    return "cp1252" if misdeclared_cp1252(body) else "utf-8"


def browser_encoding(body: bytes, header_charset: str | None) -> Decision:
    """The encoding of ``body`` in a browser's order (module docstring); ``header_charset``:
    the Content-Type header's charset, resolved (w3lib), or None."""
    bom, _ = read_bom(body)
    if bom:
        return Decision(_codec(bom), "bom")
    refused: list[tuple[str, str]] = []
    if header_charset:
        if decodes(body, header_charset):
            return Decision(canonical(header_charset), "header")
        refused.append(("header", header_charset))
    meta = html_body_declared_encoding(body)
    if meta:
        if canonical(meta).startswith("utf-16"):
            meta = "utf-8"  # HTML: a meta read as ASCII cannot be UTF-16
        if decodes(body, meta):
            return Decision(canonical(meta), "meta", tuple(refused))
        refused.append(("meta", meta))
    return Decision(detected(body), "detected", tuple(refused))


def header_charset(response: Response) -> str | None:
    content_type = response.headers.get(b"Content-Type")
    if not content_type:
        return None
    return http_content_type_encoding(content_type.decode("latin-1"))


class EncodingRepairMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.warned: set[tuple[str, str, str]] = set()  # (host, where, charset) said once

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> EncodingRepairMiddleware:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        if not isinstance(response, TextResponse) or "playwright" in response.flags:
            return response  # a browser already decoded the page its own way
        decision = browser_encoding(response.body, header_charset(response))
        if decision.source == "bom" or (decision.source == "detected" and not decision.refused):
            return response  # a byte order mark, or nothing declared: Scrapy decides alike
        if decision.encoding == _codec(response.encoding):
            return response
        if decision.refused:
            assert self.crawler.stats is not None
            self.crawler.stats.inc_value("responses/encoding_repaired")
            self._warn(response, decision)
        return response.replace(encoding=decision.encoding)

    def _warn(self, response: Response, decision: Decision) -> None:
        host = urlsplit(response.url).hostname or response.url
        new = [lie for lie in decision.refused if (host, *lie) not in self.warned]
        if not new:
            return
        self.warned.update((host, *lie) for lie in new)
        said = " and ".join(
            f"the {'Content-Type header' if where == 'header' else '<meta>'} says {charset}"
            for where, charset in new
        )
        chosen = {"meta": "the page's <meta> charset", "detected": "detected"}[decision.source]
        logger.warning(
            "%s: %s but the body is not %s (e.g. %s); decoded as %s (%s). Such pages of %s "
            "are counted in responses/encoding_repaired, without a line each",
            host,
            said,
            "in it" if len(new) == 1 else "in them",
            response.url,
            decision.encoding,
            chosen,
            host,
        )
