"""Response headers as large as a browser takes them.

Chromium reads up to 256 KB of response headers, however many. Scrapy's HTTP/1.1 client
(Twisted's) read a response line by line and dropped the connection at any line over
16 KB, a silent "connection done" retried as if the network had failed; curl (the
browser identity's handler, ``crawlers.fetch.impersonate``) takes at most 5,000 headers
and 100 KB in one.

``HeaderLimit`` (an extension) raises the HTTP/1.1 client's line limit to
``DOWNLOAD_MAX_HEADER_SIZE`` (Chromium's 256 KB), on the parser class Twisted keeps in
a private module (``crawlers.compat.http11_response_parser``): a longer line fails with
``ResponseHeadersTooLarge``, whose text the retry layer knows as a failure no retry
changes (``crawlers.fetch.retry``). A header block curl refuses is fetched again by the
HTTP/1.1 client (``crawlers.fetch.rendering``), so a page a browser reads is read.
"""

from __future__ import annotations

from typing import Any

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from crawlers.compat import http11_response_parser

# What the retry layer recognises (the text survives Scrapy's wrapping of Twisted's errors).
TOO_LARGE = "response header line over"


class ResponseHeadersTooLarge(Exception):
    """A response header line longer than the limit: the same on every attempt."""


def _line_too_long(parser: Any, line: bytes) -> None:
    # Raised inside the parser's dataReceived: Twisted's HTTP11ClientProtocol gives the
    # response up with this reason (ResponseFailed), which Scrapy turns into a
    # DownloadFailedError carrying its text.
    raise ResponseHeadersTooLarge(
        f"{TOO_LARGE} {parser.MAX_LENGTH} bytes (DOWNLOAD_MAX_HEADER_SIZE; "
        "a browser reads 256 KB of headers at most)"
    )


def set_header_limit(limit: int) -> None:
    """Every HTTP/1.1 response of this process may have header lines of ``limit`` bytes."""
    parser: Any = http11_response_parser()
    parser.MAX_LENGTH = limit
    parser.lineLengthExceeded = _line_too_long


class HeaderLimit:
    """Applies ``DOWNLOAD_MAX_HEADER_SIZE`` (0: Twisted's own 16 KB limit) at crawl start."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> HeaderLimit:
        limit = crawler.settings.getint("DOWNLOAD_MAX_HEADER_SIZE")
        if limit <= 0:
            raise NotConfigured("DOWNLOAD_MAX_HEADER_SIZE=0: Twisted's own header line limit")
        set_header_limit(limit)
        return cls()
