"""Repeated WARNING/ERROR lines but for their URLs: the first few written, the rest summed up
in one line per shape with a few URLs; every handler sees the same lines."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from crawlers.limits.log_repeats import RepeatFilter


@pytest.fixture
def outputs() -> Iterator[tuple[logging.Logger, RepeatFilter, list[io.StringIO]]]:
    logger = logging.getLogger("tests.log_repeats")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    repeat_filter = RepeatFilter(shown=3)
    streams = [io.StringIO(), io.StringIO()]
    handlers = [logging.StreamHandler(stream) for stream in streams]
    for handler in handlers:
        handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
        handler.addFilter(repeat_filter)
        logger.addHandler(handler)
    yield logger, repeat_filter, streams
    for handler in handlers:
        logger.removeHandler(handler)


def test_a_thousand_404s_make_three_lines_and_one_summary(
    outputs: tuple[logging.Logger, RepeatFilter, list[io.StringIO]],
) -> None:
    logger, repeat_filter, streams = outputs
    for n in range(1000):
        logger.error("request failed: %s (HTTP 404)", f"http://shop.test/missing/{n}")
    logger.error("request failed: %s (HTTP 500)", "http://shop.test/broken")  # another shape
    logger.info("scraped %s", "http://shop.test/a")  # INFO: never held back
    logger.info("scraped %s", "http://shop.test/b")
    repeat_filter.summarize()
    for stream in streams:  # both handlers wrote the same lines
        written = stream.getvalue().splitlines()
        assert [line for line in written if "(HTTP 404)" in line and "more" not in line] == [
            f"ERROR: request failed: http://shop.test/missing/{n} (HTTP 404)" for n in range(3)
        ]
        assert written.count("ERROR: request failed: http://shop.test/broken (HTTP 500)") == 1
        assert len([line for line in written if line.startswith("INFO: scraped")]) == 2
        (summary,) = [line for line in written if "more lines like" in line]
        assert summary == (
            'ERROR: 997 more lines like "request failed: <url> (HTTP 404)", e.g. '
            "http://shop.test/missing/3, http://shop.test/missing/4, http://shop.test/missing/5"
        )
    assert repeat_filter.held_total == 997


def test_each_summary_starts_the_count_again(
    outputs: tuple[logging.Logger, RepeatFilter, list[io.StringIO]],
) -> None:
    logger, repeat_filter, streams = outputs
    for n in range(5):
        logger.warning("slow page %s", f"http://shop.test/{n}")
    repeat_filter.summarize()
    for n in range(5, 7):
        logger.warning("slow page %s", f"http://shop.test/{n}")
    repeat_filter.summarize()  # nothing held back since: no summary line
    written = streams[0].getvalue().splitlines()
    assert len([line for line in written if line.startswith("WARNING: slow page")]) == 5
    assert [line for line in written if "more lines like" in line] == [
        'WARNING: 2 more lines like "slow page <url>", e.g. http://shop.test/3, http://shop.test/4'
    ]
