"""A page's encoding as a browser decides it (BOM, a header charset that decodes the body,
the meta charset, detection), and a lying declaration named once per host and charset."""

from __future__ import annotations

import logging

import pytest
from scrapy import Request, Spider
from scrapy.http import HtmlResponse, TextResponse
from scrapy.utils.test import get_crawler

from crawlers.fetch.encoding import (
    Decision,
    EncodingRepairMiddleware,
    browser_encoding,
    decodes,
)

TEXT = "<html><head><title>Caf\u00e9</title></head><body><h1>Cr\u00e8me \u20ac</h1></body></html>"


def test_each_step_in_a_browser_s_order() -> None:
    utf8 = TEXT.encode()
    # A byte order mark first, whatever the header says.
    assert browser_encoding(b"\xef\xbb\xbf" + utf8, "utf-16").source == "bom"
    # The header, when the body is in it.
    assert browser_encoding(TEXT.encode("cp1252"), "cp1252") == Decision("cp1252", "header")
    # A header charset the body is not in: refused, the meta charset next, then detection.
    meta = f'<meta charset="shift_jis"><p>{chr(0x3042)}</p>'.encode("shift_jis")
    assert browser_encoding(meta, "utf-8") == Decision("cp932", "meta", (("header", "utf-8"),))
    assert browser_encoding(utf8, "utf-16") == Decision(
        "utf-8", "detected", (("header", "utf-16"),)
    )
    # A real UTF-16 page without a BOM keeps its header (little-endian, as browsers read it).
    assert browser_encoding(TEXT.encode("utf-16-le"), "utf-16") == Decision("utf-16-le", "header")
    # cp1252 labelled UTF-8 by header and meta: both refused, detected as cp1252.
    legacy = ('<meta charset="utf-8">' + TEXT).encode("cp1252")
    assert browser_encoding(legacy, "utf-8") == Decision(
        "cp1252", "detected", (("header", "utf-8"), ("meta", "utf-8"))
    )
    # Mostly UTF-8 with one broken byte stays UTF-8 (the byte becomes U+FFFD).
    assert browser_encoding(utf8 + b"\xff", "utf-8").encoding == "utf-8"
    # A meta saying UTF-16 means UTF-8 (it was itself read as ASCII).
    assert browser_encoding(b'<meta charset="utf-16">' + utf8, None) == Decision("utf-8", "meta")


def test_utf_16_is_only_believed_with_the_nul_bytes_of_its_markup() -> None:
    assert decodes(TEXT.encode("utf-16-le"), "utf-16")
    assert not decodes(b"<html><p>ascii only, even length</p></html>", "utf-16")
    assert not decodes(TEXT.encode(), "utf-32")


def _page(url: str, charset: str) -> HtmlResponse:
    return HtmlResponse(
        url, body=TEXT.encode(), headers={"Content-Type": f"text/html; charset={charset}"}
    )


def test_a_lying_header_is_repaired_and_named_once_per_host_and_charset(
    caplog: pytest.LogCaptureFixture,
) -> None:
    crawler = get_crawler(Spider, {"STATS_CLASS": "scrapy.statscollectors.MemoryStatsCollector"})
    crawler.spider = Spider.from_crawler(crawler, name="unit")
    middleware = EncodingRepairMiddleware(crawler)
    pages = [_page(f"http://shop.test/p/{n}", "utf-16") for n in range(5)]
    pages.append(_page("http://other.test/p/1", "utf-16"))
    with caplog.at_level(logging.WARNING, logger="crawlers.fetch.encoding"):
        repaired = [middleware.process_response(Request(p.url), p) for p in pages]
    assert all(isinstance(r, TextResponse) and "Cr\u00e8me \u20ac" in r.text for r in repaired)
    assert crawler.stats.get_value("responses/encoding_repaired") == 6
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2  # one per host, not one per page
    assert warnings[0].startswith("shop.test: the Content-Type header says utf-16 but")
    assert "decoded as utf-8 (detected)" in warnings[0]
    # A page whose header is right is left as it is, and not counted.
    right = _page("http://shop.test/p/9", "utf-8")
    assert middleware.process_response(Request(right.url), right) is right
    assert crawler.stats.get_value("responses/encoding_repaired") == 6
