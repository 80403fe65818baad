"""A site that refuses every page: the crawl closes early, says why in one line, exits 3."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.bot_defense import BotDefense
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


def test_a_datadome_style_refusal_of_a_self_announcing_client_names_its_user_agent(
    start_site: Callable[..., DemoSite], tmp_path: Path
) -> None:
    """A DataDome-style defense answers the platform's own User-Agent with its CAPTCHA
    from the first request: the line names the User-Agent and the fix, not the rate."""
    site = start_site(products=10)
    with BotDefense(upstream=site.url, level=1, style="datadome", run_dir=tmp_path / "dd") as dd:
        result = run_crawl(
            tmp_path,
            base_url=dd.url,
            settings={
                "FETCH_IDENTITY": "crawler",
                "REFUSAL_CLOSE_AFTER": 3,
                "RETRY_BACKOFF_BASE": 0.01,
            },
        )
        reasons = {r["reason"] for r in dd.log_records()}
    assert result.returncode == 3, result.log[-3000:]
    assert reasons == {"ua_automation"}  # the stand-in refused the User-Agent, always
    line = str(result.stat("refusal"))
    assert result.stat("blocks/captcha") >= 3 and "[captcha" in line
    assert "User-Agent 'scraping-platform/0.1" in line and "FETCH_IDENTITY=browser" in line
    assert "SESSION_MAX_RATE" not in line
