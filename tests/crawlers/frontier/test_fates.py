"""Every request a scheduler hands out ends, whatever drops it (crawlers/frontier/fates.py).

The unit tests name drops; the crawls run real ``scrapy crawl`` / ``scrapy runspider``
workers against the demo shop on loopback, on a real Redis (frontier mode) and without
one (local mode): a product answering ``302`` to another host (the shop's other loopback
name) is failed through its errback with one WARNING naming both hosts and counted, the
job drains and nothing stays leased; robots.txt, a middleware's ``IgnoreRequest``, a URL
scheme no handler takes and a redirect loop end their leases with their reason.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.exceptions import IgnoreRequest, NotSupported
from scrapy.http import HtmlResponse, Response
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from core.fetch.blocks import Verdict
from core.figures.ledger import dropped_figures
from core.frontier.queue import RedisFrontier
from core.jobs.index import job_counters
from core.keys import SiteKeys
from crawlers.addon import COMPONENTS
from crawlers.cli.producer import produce
from crawlers.fetch.retry import PageBlocked
from crawlers.frontier.fates import RequestDropped, drop_reason, host_of
from harness.demo_site import DemoSite
from harness.redis_server import RedisServer
from standins.demo_site.catalog import build_catalog
from tests.crawlers.support import (
    REPO_ROOT,
    crawl_env,
    final_stats,
    log_excerpt,
    settings_argv,
    start_worker,
    sunk_items,
    tracked,
    wait_all,
)

PRODUCTS = 12

# -- unit: naming drops ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exception", "reason"),
    [
        (IgnoreRequest("Forbidden by robots.txt"), "robots"),
        (IgnoreRequest("Filtered offsite request to 'localhost'"), "offsite"),
        (IgnoreRequest("max redirections reached"), "redirect_limit"),
        (IgnoreRequest("redirect loop: redirect loop back to http://x/"), "redirect_loop"),
        (IgnoreRequest("a middleware's own reason"), "ignored"),
        (IgnoreRequest(), "ignored"),
        (NotSupported("Unsupported URL scheme 'gopher'"), "unsupported"),
        (RequestDropped("offsite_redirect", "dropped ..."), "offsite_redirect"),
        (ConnectionRefusedError("refused"), None),
        (ValueError("a callback's bug"), None),
    ],
)
def test_a_drop_is_named(exception: BaseException, reason: str | None) -> None:
    assert drop_reason(exception) == reason


class FilteredByProject(IgnoreRequest):
    pass


def test_an_ignore_request_subclass_names_itself_and_an_answer_is_no_drop() -> None:
    assert drop_reason(FilteredByProject()) == "filtered_by_project"
    # The site answered: an HTTP error, a block page the fetch layer gave up on. Counted
    # by the fetch layer and the ledger's pages/refused, not here.
    response = HtmlResponse("http://example.invalid/", status=404)
    assert drop_reason(HttpError(response, "Ignoring non-200 response")) is None
    assert drop_reason(PageBlocked(Verdict("blocked", "a block page"), response)) is None


def test_the_ledger_counts_drops_that_lose_a_page_as_failed() -> None:
    reasons = ["offsite_redirect", "robots", "duplicate", "redirect_loop", "robots"]
    assert dropped_figures(reasons) == {
        "requests/failed": 2,
        "requests/dropped/duplicate": 1,
        "requests/dropped/offsite_redirect": 1,
        "requests/dropped/redirect_loop": 1,
        "requests/dropped/robots": 2,
    }
    assert dropped_figures([]) == {"requests/failed": 0}
    assert host_of("http://127.0.0.1:8000/product/DM-00001") == "127.0.0.1:8000"


# -- the demo spider, a product redirected to another host ----------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSite]:
    run_dir = tmp_path_factory.mktemp("fates-site")
    with DemoSite(run_dir=run_dir, products=PRODUCTS, name="fates-site") as server:
        yield server


def moved_product() -> str:
    """The SKU of the product that answers 302 to the shop's other host name."""
    return build_catalog(n_products=PRODUCTS).products[4].sku


def offsite_warnings(log: Path, site: DemoSite) -> list[str]:
    port = site.url.rsplit(":", 1)[1]
    return [
        line
        for line in log.read_text().splitlines()
        if " WARNING: " in line and f"127.0.0.1:{port}" in line and f"localhost:{port}" in line
    ]


def test_an_offsite_redirect_fails_its_lease_and_the_job_drains(
    site: DemoSite, redis_server: RedisServer, tmp_path: Path
) -> None:
    server = redis_server.client()
    server.flushdb()
    site.reset()
    sku = moved_product()
    site.control(offsite_redirect={"paths": [f"/product/{sku}"]})
    log = tmp_path / "worker.log"
    produce(server, "demo", job_id="offsite-1", base_url=site.url)
    worker = start_worker(
        redis_url=redis_server.url,
        job_id="offsite-1",
        base_url=site.url,
        sink_key="items",
        log_path=log,
        settings={"FRONTIER_IDLE_CLOSE_SECONDS": 1},
    )
    # Before the fix the worker never reached its idle close: the lease stayed held.
    assert wait_all([worker], timeout=120) == [0], log_excerpt(log)

    skus = sorted(str(item["sku"]) for item in sunk_items(server, "items"))
    catalog = build_catalog(n_products=PRODUCTS).products
    assert skus == sorted(p.sku for p in catalog if p.sku != sku)
    frontier = RedisFrontier(server, "demo")
    assert (frontier.queued(), frontier.leased()) == (0, 0)  # nothing left held
    assert "leases back to the frontier" not in log.read_text()
    # The job's ledger and figures: one request failed, named.
    dropped = server.hgetall(SiteKeys("demo").job_dropped("offsite-1"))
    assert [value.decode() for value in dropped.values()] == ["offsite_redirect"]
    counters = job_counters(server, "demo", "offsite-1")
    assert counters["requests/failed"] == 1
    assert counters["requests/dropped/offsite_redirect"] == 1
    stats = final_stats(log)
    assert stats["requests/dropped/offsite_redirect"] == 1
    assert stats["demo/request_failed"] == 1  # the spider's errback ran
    # One WARNING naming both hosts (Scrapy's own line is a DEBUG one).
    (line,) = offsite_warnings(log, site)
    assert f"/product/{sku}" in line and "offsite_redirect" in line
    # Nothing fetched from the other host.
    assert all(e.get("path") != f"/product/{sku}" or e["status"] == 302 for e in site.access_log())
    server.flushdb()


def test_an_offsite_redirect_in_local_mode_is_counted_failed(
    site: DemoSite, tmp_path: Path
) -> None:
    site.reset()
    sku = moved_product()
    site.control(offsite_redirect={"paths": [f"/product/{sku}"]})
    log, output = tmp_path / "local.log", tmp_path / "items.jsonl"
    argv = [sys.executable, "-m", "scrapy", "crawl", "demo", "-a", f"base_url={site.url}"]
    argv += ["-O", str(output)]
    argv += settings_argv({"LOG_FILE": str(log), "LOG_LEVEL": "INFO"})
    process = tracked(subprocess.Popen(argv, cwd=REPO_ROOT, env=crawl_env()))
    assert wait_all([process], timeout=120) == [0], log_excerpt(log)

    items = [json.loads(line) for line in output.read_text().splitlines()]
    assert sku not in {item["sku"] for item in items}
    assert len(items) == PRODUCTS - 1
    stats = final_stats(log)
    assert stats["requests/dropped/offsite_redirect"] == 1
    assert stats["requests/failed"] == 1
    assert stats["demo/request_failed"] == 1
    (line,) = offsite_warnings(log, site)
    assert f"/product/{sku}" in line


# -- a plain spider, every other way a request is dropped --------------------------------------


class DroppingMiddleware:
    """A downloader middleware that ignores some requests, as a filter of a project's would."""

    def process_request(self, request: Request) -> None:
        if "ignore-me" in request.url:
            raise IgnoreRequest("the project's filter does not want it")


class FateSpider(Spider):
    name = "demo"  # the demo site's frontier keys; the site is the test's own DemoSite

    async def start(self) -> AsyncIterator[Any]:
        base = self.settings["DEMO_SITE_URL"]
        self.allowed_domains = ["127.0.0.1"]
        yield Request(f"{base}/", callback=self.parse_page)
        yield Request(f"{base}/cart", callback=self.parse_page, errback=self.on_failure)  # robots
        # A -> B -> A: the redirect layer allows one revisit (cookies on), the job's
        # seen-set refuses it; outside the seen-set the redirect layer ends the loop.
        yield Request(f"{base}/edge/redirect-loop", errback=self.on_failure)
        looping = f"{base}/category/garden?__behaviour=redirect_loop"
        yield Request(looping, errback=self.on_failure, dont_filter=True)
        yield Request(f"{base}/ignore-me", callback=self.parse_page)  # no errback
        yield Request("gopher://127.0.0.1/", errback=self.on_failure)  # no handler takes it
        yield Request(
            f"{base}/category/kitchen?__behaviour=offsite_redirect", errback=self.on_failure
        )

    def parse_page(self, response: Response) -> Iterator[dict[str, Any]]:
        yield {"kind": "page", "url": response.url}

    def on_failure(self, failure: Failure) -> Iterator[dict[str, Any]]:
        yield {"kind": f"errback-{type(failure.value).__name__}", "url": failure.request.url}  # type: ignore[attr-defined]


def test_every_drop_ends_its_lease_with_its_reason(
    site: DemoSite, redis_server: RedisServer, tmp_path: Path
) -> None:
    server = redis_server.client()
    server.flushdb()
    site.reset()
    log = tmp_path / "fates.log"
    settings = {
        "REDIS_URL": redis_server.url,
        "JOB_ID": "fates-job",
        "DEMO_SITE_URL": site.url,
        "ROBOTSTXT_OBEY": True,
        "COOKIES_ENABLED": True,
        "ITEM_PIPELINES": {"tests.crawlers.support.RedisItemSink": 100},
        "TEST_ITEM_SINK_KEY": "items",
        # A whole dict from -s replaces the add-on's: its fetch stack, and the filter.
        "DOWNLOADER_MIDDLEWARES": {
            **COMPONENTS["DOWNLOADER_MIDDLEWARES"],
            "tests.crawlers.frontier.test_fates.DroppingMiddleware": 10,
        },
        "FRONTIER_IDLE_CLOSE_SECONDS": 1,
        "FRONTIER_HEARTBEAT_INTERVAL": 0.5,
        "LOG_FILE": str(log),
        "LOG_LEVEL": "INFO",
    }
    argv = [sys.executable, "-m", "scrapy", "runspider", __file__, *settings_argv(settings)]
    process = tracked(subprocess.Popen(argv, cwd=REPO_ROOT, env=crawl_env()))
    assert wait_all([process], timeout=120) == [0], log_excerpt(log)

    frontier = RedisFrontier(server, "demo")
    assert (frontier.queued(), frontier.leased()) == (0, 0), log_excerpt(log)
    reasons = sorted(v.decode() for v in server.hvals(SiteKeys("demo").job_dropped("fates-job")))
    assert reasons == sorted(
        ["robots", "redirect_loop", "redirect_loop", "ignored", "unsupported", "offsite_redirect"]
    ), log_excerpt(log)
    counters = job_counters(server, "demo", "fates-job")
    assert counters["requests/failed"] == 5  # robots.txt forbidding a page loses nothing
    kinds = sorted(str(item["kind"]) for item in sunk_items(server, "items"))
    assert kinds == sorted(
        [
            "page",
            "errback-IgnoreRequest",  # robots.txt
            "errback-RequestDropped",  # the loop the seen-set refused, failed here
            "errback-IgnoreRequest",  # the loop the redirect layer ended
            "errback-NotSupported",
            "errback-RequestDropped",  # the offsite redirect, failed through its errback
        ]
    ), log_excerpt(log)
    text = log.read_text()
    # The project's filter names its own reason in one WARNING; nothing is silent.
    assert len(re.findall(r"WARNING: dropped \S+/ignore-me: .*requests/dropped/ignored", text)) == 1
    server.flushdb()
