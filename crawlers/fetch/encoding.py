"""Pages that say UTF-8 but are Windows-1252: decoded as what they are.

A common server misconfiguration: the bytes are cp1252 (a legacy CMS, a template
concatenated from old files) while the header and ``<meta>`` say UTF-8. Decoded as
UTF-8, every accented letter becomes U+FFFD and the item is quietly wrong. A body that
is invalid UTF-8 *and* holds no valid multi-byte UTF-8 sequence at all is single-byte
text; it is re-read as cp1252. A mostly-UTF-8 page with a few broken bytes keeps UTF-8.

Stat: ``responses/encoding_repaired``.
"""

from __future__ import annotations

import logging
import re

from scrapy.crawler import Crawler
from scrapy.http import Request, Response, TextResponse

logger = logging.getLogger(__name__)

_UTF8_MULTIBYTE = re.compile(rb"[\xc2-\xf4][\x80-\xbf]")
_UTF8_NAMES = frozenset({"utf-8", "utf8"})


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


class EncodingRepairMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> EncodingRepairMiddleware:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        if not isinstance(response, TextResponse) or "playwright" in response.flags:
            return response  # a browser already decoded the page its own way
        if response.encoding.lower().replace("_", "-") not in _UTF8_NAMES:
            return response
        if not misdeclared_cp1252(response.body):
            return response
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("responses/encoding_repaired")
        logger.info("%s: declared UTF-8 but is cp1252; decoded as cp1252", response.url)
        return response.replace(encoding="cp1252")
