"""A site without robots.txt is normal: its 404 is not an error response, and the job's
error figures and the crawl's stats agree (a real crawl of a loopback site)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from core.jobs.index import job_document
from orchestration.report import table_rows
from tests.crawlers.fetch.support import run_crawl

SPIDER = Path(__file__).with_name("robotless_spider.py")
HOME = (
    b"""<!doctype html><html><head><title>Robotless shop</title></head><body>
<p>A shop that never published a robots.txt.</p><a href="/gone">an old page</a>
"""
    + b"<p>filler text so the page is not a near-empty block answer.</p>" * 20
    + b"</body></html>"
)


class Handler(BaseHTTPRequestHandler):
    paths: list[str] = []  # the access log: each server gets its own list

    def do_GET(self) -> None:
        self.paths.append(self.path)
        if self.path == "/":
            status, body = 200, HOME
        else:  # /robots.txt and /gone: there is no such file
            status, body = 404, b"<html><body><h1>Not found</h1></body></html>"
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


@pytest.fixture
def robotless_site() -> Iterator[tuple[str, list[str]]]:
    handler = type("RobotlessHandler", (Handler,), {"paths": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler.paths
    finally:
        server.shutdown()
        server.server_close()


def test_a_missing_robots_txt_is_not_an_error(
    robotless_site: tuple[str, list[str]], tmp_path: Path
) -> None:
    url, paths = robotless_site
    result = run_crawl(tmp_path, base_url=url, spider_file=SPIDER, timeout=120)
    assert result.returncode == 0, result.log[-3000:]
    assert sorted(paths) == ["/", "/gone", "/robots.txt"]
    assert [item["title"] for item in result.items] == ["Robotless shop"]
    stats = result.stats
    assert stats["robotstxt/response_status_count/404"] == 1  # Scrapy's own count
    assert stats["responses/robots_txt_missing"] == 1
    # The page that is gone is the one error response; robots.txt is not among them.
    assert stats["responses/error"] == 1 and stats["responses/error_status/404"] == 1
    assert stats["responses/ok"] == 1 and stats["responses/classified"] == 3
    assert "log_count/ERROR" not in stats
    assert "1 errors;" in result.log_lines("fetch summary:")[0]

    document = job_document("robotless", "j1", "completed", None, None, stats)
    assert (document["errors"], document["error_responses"]) == (0, 1)
    rows = {row["metric"]: row["value"] for row in table_rows(document, chunks=0)}
    assert (rows["errors (ERROR log lines)"], rows["error responses (HTTP 4xx/5xx)"]) == (0, 1)
