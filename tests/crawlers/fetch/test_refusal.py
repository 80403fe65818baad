"""A site that refuses every page: the crawl closes early, says why in one line, exits 3."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.demo_site import DemoSite
from tests.crawlers.fetch.support import run_crawl


def test_a_crawl_every_page_of_which_is_blocked_ends_refused_in_one_line(
    start_site: Callable[..., DemoSite], tmp_path: Path
) -> None:
    site = start_site(products=60)
    site.control(forbidden={"rate": 1.0, "attempts": None})
    result = run_crawl(
        tmp_path,
        base_url=site.url,
        settings={
            "REFUSAL_CLOSE_AFTER": 3,
            "RETRY_BACKOFF_BASE": 0.01,
            "FETCH_IDENTITY": "crawler",
        },
    )
    assert result.returncode == 3, result.log[-3000:]
    assert result.stat("finish_reason") == "refused"
    assert result.items == []
    refusals = result.log_lines("every page was refused:")
    # One line at the close (plus the early-close line that quotes it), and the crawl's
    # final word, the log's last line, with the same reason.
    assert result.log.splitlines()[-1].endswith(f"finish_reason refused: {result.stat('refusal')}")
    closing = [
        line for line in refusals[:-1] if "closing the crawl" not in line and "ERROR" in line
    ]
    assert len(closing) == 1 and "ERROR" in closing[0]
    assert "FETCH_IDENTITY=browser" in closing[0]  # points at the client's own identity
    assert result.stat("refusal") in closing[0]
    # It stopped early: far fewer requests than the site's pages times the retries.
    assert result.stat("responses/classified") < 30
    assert "Traceback" not in result.log


def test_a_crawl_with_some_blocks_is_not_refused(
    start_site: Callable[..., DemoSite], tmp_path: Path
) -> None:
    site = start_site(products=20)
    site.control(forbidden={"rate": 0.3, "attempts": 1})
    result = run_crawl(
        tmp_path, base_url=site.url, settings={"RETRY_BACKOFF_BASE": 0.01, "REFUSAL_CLOSE_AFTER": 3}
    )
    assert result.returncode == 0, result.log[-3000:]
    assert result.stat("finish_reason") == "finished"
    assert result.stat("blocks/blocked") > 0 and not result.stat("refusal", None)
    assert len(result.items) == 20
