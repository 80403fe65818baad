"""Progress figures of the long steps, and the report's links: pure, no services."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import unquote

import pytest

from core.frontier.drain import DrainState
from core.frontier.workers import WorkerInfo
from indexing.process import ProcessReport
from orchestration.progress import (
    LlmProgress,
    RateMeter,
    StepProgress,
    drain_progress,
    llm_progress,
)
from orchestration.report import failure_markdown, kibana_dashboard_url, links_markdown


def state(queued: int, leased: int, counters: dict[str, int], busy: int = 1) -> DrainState:
    workers = [
        WorkerInfo(worker_id=f"w{n}", site="demo", pid=n, host="h", idle=n >= busy)
        for n in range(2)
    ]
    return DrainState(
        site="demo",
        job_id="demo-1",
        queued=queued,
        leased=leased,
        workers=workers,
        counters=counters,
        counters_stable_for=0.0,
        stable_window=5.0,
    )


def test_drain_figures_from_one_poll() -> None:
    counters = {
        "downloader/response_count": 300,
        "items/new": 120,
        "items/changed": 3,
        "items/unchanged": 7,
        "items/invalid": 2,
        "blocks/captcha": 6,
    }
    figures = drain_progress(state(80, 20, counters), pages_per_second=50.0)
    assert figures.percent == pytest.approx(75.0)
    assert figures.items == {"new": 120, "changed": 3, "unchanged": 7, "invalid": 2}
    assert figures.blocked == 6 and figures.block_rate == pytest.approx(0.02)
    assert figures.workers == 2 and figures.busy_workers == 1
    assert figures.seconds_left == pytest.approx(2.0)
    rows = {row["metric"]: row["value"] for row in figures.rows()}
    assert rows["progress"] == "75.0%" and rows["pages queued"] == 80
    assert rows["block rate"] == "2.00%" and rows["time left (estimate)"] == "2s"
    line = figures.line()
    assert "crawl 75%: 300 pages fetched, 80 queued, 20 in flight" in line
    assert "new 120, changed 3, unchanged 7, invalid 2" in line


def test_pages_fetched_are_the_reports_pages_not_every_response() -> None:
    # Two workers fetched robots.txt once each: responses, but no pages of the job's (the
    # report's "pages fetched", counted by the ledger, leaves them out too).
    counters = {
        "downloader/response_count": 2463,
        "responses/classified": 2463,
        "responses/robots_txt": 2,
    }
    figures = drain_progress(state(0, 0, counters), pages_per_second=None)
    assert figures.pages_done == 2461
    assert {row["metric"]: row["value"] for row in figures.rows()}["pages fetched"] == 2461


def test_drain_figures_before_anything_and_when_done() -> None:
    start = drain_progress(state(0, 0, {}), pages_per_second=None)
    assert start.percent == 0.0 and start.block_rate is None and start.seconds_left == 0.0
    unknown = drain_progress(state(10, 0, {"downloader/response_count": 0}), None)
    assert unknown.percent == 0.0 and unknown.seconds_left is None
    done = drain_progress(state(0, 0, {"downloader/response_count": 50}), 10.0)
    assert done.percent == 100.0 and done.seconds_left == 0.0


def test_rate_is_measured_over_the_recent_window() -> None:
    meter = RateMeter(window=10.0)
    assert meter.add(0.0, 0) is None
    assert meter.add(1.0, 100) == pytest.approx(100.0)
    assert meter.add(2.0, 150) == pytest.approx(75.0)
    # Older samples leave the window: the rate follows the recent pace.
    for second in range(3, 30):
        rate = meter.add(float(second), 150 + 10 * (second - 2))
    assert rate == pytest.approx(10.0)


def test_llm_figures() -> None:
    report = ProcessReport(site="demo", job_id="j", embedder="e", items=200)
    report.chunks_embedded, report.chunks_written, report.skipped_unchanged = 90, 88, 4
    report.seconds = 10.0
    figures = llm_progress(report, 50)
    assert isinstance(figures, LlmProgress)
    assert figures.percent == 25.0 and figures.seconds_left == pytest.approx(30.0)
    assert "llm-process 25%: 50/200 items, 90 chunks embedded, 88 indexed" in figures.line()
    assert llm_progress(ProcessReport("demo", "j", "e", items=0), 0).percent == 100.0


class Recorded(StepProgress):
    """StepProgress with the artifact calls recorded instead of sent."""

    def __init__(self, logger: logging.Logger, clock: list[float]) -> None:
        super().__init__("scrape-demo-crawl", "d", logger, log_interval=30, clock=lambda: clock[0])
        self.sent: list[tuple[str, Any]] = []

    def _progress(self, percent: float) -> None:
        self.sent.append(("progress", percent))
        self._last_percent = percent

    def _table(self, rows: list[dict[str, Any]]) -> None:
        self.sent.append(("table", len(rows)))


def test_step_progress_throttles_the_log_not_the_progress(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = [0.0]
    logger = logging.getLogger("test.progress")
    step = Recorded(logger, clock)
    with caplog.at_level(logging.INFO, logger="test.progress"):
        for second, percent in [(0, 0.0), (1, 10.0), (2, 10.0), (6, 40.0), (31, 90.0)]:
            clock[0] = float(second)
            step.update(percent, [{"metric": "m", "value": 1}], f"line {second}")
        step.finish([{"metric": "m", "value": 1}], "done")
    progress = [value for kind, value in step.sent if kind == "progress"]
    assert progress == [0.0, 10.0, 40.0, 90.0, 100.0]  # every change, no repeats
    tables = [kind for kind, _ in step.sent if kind == "table"]
    assert len(tables) == 4  # at 0, 6, 31 (5 s apart at least) and the final one
    assert [r.getMessage() for r in caplog.records] == ["line 0", "line 31", "done"]


def test_kibana_link_filters_the_dashboard_to_the_job() -> None:
    url = kibana_dashboard_url("http://127.0.0.1:5601/", "demo-0123abc")
    assert url.startswith("http://127.0.0.1:5601/app/dashboards#/view/platform-overview?")
    assert "query:(language:kuery,query:'job_id:\"demo-0123abc\"')" in unquote(url)
    assert "time:(from:now-30d,to:now)" in unquote(url)
    with_kibana = "\n".join(links_markdown("demo", "demo-1", "http://k:5601"))
    assert "items-demo" in with_kibana and "chunks-demo" in with_kibana
    assert "[Kibana dashboard filtered to job `demo-1`](http://k:5601/app/" in with_kibana
    assert "Kibana" not in "\n".join(links_markdown("demo", "demo-1", None))


def test_failure_story_names_the_step_and_its_last_lines() -> None:
    text = failure_markdown("scrape-demo", "wait-for-drain", "DrainTimeout: x", ["INFO a", "b"])
    assert text.startswith("# scrape-demo: failed in step `wait-for-drain`")
    assert "DrainTimeout: x" in text and "INFO a\nb" in text
    assert "(none recorded)" in failure_markdown("f", "s", "e", [])
