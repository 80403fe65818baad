"""The retry layer's failures no retry changes: a header block over the client's limit is
given up at once, a TLS failure once it repeats word for word, and every give-up names
the cause's text (Twisted's wrapped reason unwrapped, credentials redacted)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import DownloadConnectionRefusedError, DownloadFailedError
from scrapy.utils.test import get_crawler
from twisted.python.failure import Failure
from twisted.web.client import ResponseFailed

from crawlers.fetch.header_limit import ResponseHeadersTooLarge
from crawlers.fetch.retry import (
    LAST_FAILURE_META,
    BlockRetryMiddleware,
    cause_text,
    not_worth_retrying,
)

TLS = "Failed to perform, curl: (35) TLS connect error: error:0A000410:SSL routines::sslv3 alert"


def crawler_with(settings: dict[str, Any] | None = None) -> Crawler:
    """A crawler with the platform's add-on, as ``scrapy crawl`` has it; no backoff."""
    merged = {"ADDONS": {"crawlers.addon.ScrapingPlatform": 0}, "RETRY_BACKOFF_BASE": 0}
    crawler = get_crawler(Spider, {**merged, **(settings or {})})
    crawler.spider = Spider.from_crawler(crawler, name="unit")
    return crawler


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def wrapped(error: Exception) -> DownloadFailedError:
    """What Scrapy's HTTP/1.1 handler raises for a response Twisted gave up on."""
    try:
        raise ResponseFailed([Failure(error)])
    except ResponseFailed as reason:
        try:
            raise DownloadFailedError(str(reason)) from reason
        except DownloadFailedError as exc:
            return exc


def test_the_cause_is_the_wrapped_reason_in_words_without_credentials() -> None:
    too_large = wrapped(ResponseHeadersTooLarge("response header line over 262144 bytes"))
    assert cause_text(too_large) == (
        "ResponseHeadersTooLarge: response header line over 262144 bytes"
    )
    via = DownloadFailedError("CONNECT refused by http://user:s3cret@proxy.test:8080")
    assert "s3cret" not in cause_text(via) and cause_text(via).startswith("DownloadFailedError:")
    assert cause_text(DownloadConnectionRefusedError()) == "DownloadConnectionRefusedError"


def test_what_is_not_worth_retrying() -> None:
    header = "ResponseHeadersTooLarge: response header line over 262144 bytes (...)"
    assert not_worth_retrying(header, None) == "the same on every attempt"
    tls = f"DownloadFailedError: {TLS}"
    assert not_worth_retrying(tls, None) is None  # the first may be a proxy's
    assert not_worth_retrying(tls, tls) == "the same TLS failure twice"
    refused = "DownloadConnectionRefusedError: Connection refused"
    assert not_worth_retrying(refused, refused) is None  # a restarting server: retried


def test_a_header_block_over_the_limit_is_given_up_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    crawler = crawler_with()
    middleware = BlockRetryMiddleware.from_crawler(crawler)
    request = Request("http://site.test/p/1")
    error = wrapped(ResponseHeadersTooLarge("response header line over 262144 bytes"))
    with caplog.at_level(logging.WARNING):
        assert run(middleware.process_exception(request, error)) is None
    stats = crawler.stats.get_stats()
    assert stats["fetch/gave_up/deterministic"] == 1 and "retry/count" not in stats
    [line] = [r.getMessage() for r in caplog.records if "not retrying" in r.getMessage()]
    assert "response header line over 262144 bytes (the same on every attempt)" in line


def test_a_tls_failure_is_retried_once_then_given_up_when_it_repeats() -> None:
    crawler = crawler_with()
    middleware = BlockRetryMiddleware.from_crawler(crawler)
    request = Request("http://site.test/p/1")
    retry = run(middleware.process_exception(request, DownloadFailedError(TLS)))
    assert isinstance(retry, Request) and retry.meta[LAST_FAILURE_META].endswith("sslv3 alert")
    assert run(middleware.process_exception(retry, DownloadFailedError(TLS))) is None
    assert crawler.stats.get_value("fetch/gave_up/deterministic") == 1
    # Another TLS failure is not a repeat: retried.
    other = DownloadFailedError(TLS.replace("sslv3 alert", "wrong version number"))
    assert isinstance(run(middleware.process_exception(retry, other)), Request)


def test_giving_up_names_the_cause_not_only_its_class(caplog: pytest.LogCaptureFixture) -> None:
    crawler = crawler_with({"RETRY_TIMES": 1})
    middleware = BlockRetryMiddleware.from_crawler(crawler)
    request = Request("http://site.test/p/1")
    error = DownloadConnectionRefusedError("Connection was refused by other side: 111")
    retry = run(middleware.process_exception(request, error))
    assert isinstance(retry, Request)
    with caplog.at_level(logging.ERROR):
        assert run(middleware.process_exception(retry, error)) is None
    [line] = [r.getMessage() for r in caplog.records if "Gave up retrying" in r.getMessage()]
    assert line.endswith(
        "(failed 2 times): DownloadConnectionRefusedError: Connection was refused by other "
        "side: 111"
    )
    stats = crawler.stats.get_stats()
    assert stats["retry/max_reached"] == 1 and stats["fetch/gave_up/network"] == 1
