"""Lease acks driven by public extension points (crawlers/frontier/acks.py).

A lease is acked exactly when the scraper is done with its request: after the output
of its callback or errback is exhausted and each item of it has left the pipelines, or
when it failed for good; never earlier, and never left un-acked. The unit tests drive
``LeaseAcks`` with the events Scrapy sends; the crawl test runs a plain ``scrapy.Spider``
(not a SiteSpider) on the frontier through every path a response or failure can take,
then a second worker of the same job, whose start() requests the job has already seen.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from itemadapter import ItemAdapter
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import FormRequest, HtmlResponse, Response
from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler
from twisted.python.failure import Failure

from core.frontier.queue import RedisFrontier
from crawlers.frontier.acks import LEASE_META, LeaseAcks, LeaseErrback, unwrap_errback, wrap_errback
from crawlers.frontier.meta import FrontierConfigError
from crawlers.frontier.queue import JobDupeFilter, LeasedQueue
from crawlers.frontier.scheduler import LeaseAckMiddleware, LeasingScheduler, is_leasing_scheduler
from crawlers.frontier.worker import FrontierWorker
from harness.demo_site import DemoSite
from harness.redis_server import RedisServer
from tests.crawlers.support import REPO_ROOT, log_excerpt

# -- unit: LeaseAcks with the events Scrapy sends ------------------------------------------


class Clock:
    """``call_later`` that runs callbacks only when the test turns the reactor."""

    def __init__(self) -> None:
        self.calls: list[tuple[Callable[[str], None], str]] = []

    def call_later(self, delay: float, func: Callable[[str], None], arg: str) -> None:
        self.calls.append((func, arg))

    def turn(self) -> None:
        calls, self.calls = self.calls, []
        for func, arg in calls:
            func(arg)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def acked() -> list[str]:
    return []


@pytest.fixture
def acks(clock: Clock, acked: list[str]) -> LeaseAcks:
    return LeaseAcks(acked.append, clock.call_later)


def leased_response(lease_id: str) -> Response:
    request = Request("http://example.invalid/", meta={LEASE_META: lease_id})
    return HtmlResponse(request.url, body=b"<html></html>", request=request)


def download_failure(lease_id: str) -> Failure:
    failure = Failure(ConnectionRefusedError("refused"))
    failure.request = Request("http://example.invalid/", meta={LEASE_META: lease_id})  # type: ignore[attr-defined]
    return failure


async def aiter_of(*outputs: Any) -> AsyncIterator[Any]:
    for output in outputs:
        yield output


async def drain(stream: AsyncIterator[Any]) -> list[Any]:
    return [output async for output in stream]


def test_a_response_is_acked_after_its_output_and_its_items(
    acks: LeaseAcks, clock: Clock, acked: list[str]
) -> None:
    response = leased_response("1")
    acks.response_entered(response)
    follow = Request("http://example.invalid/next")
    outputs = asyncio.run(drain(acks.track_output(response, aiter_of({"a": 1}, follow, {"b": 2}))))
    assert outputs == [{"a": 1}, follow, {"b": 2}]
    clock.turn()
    assert acked == []  # two items still in the pipelines
    acks.item_done(response=response)
    clock.turn()
    assert acked == []
    acks.item_done(response=response)
    assert acked == []  # one reactor turn later, not at once
    clock.turn()
    assert acked == ["1"]
    assert len(acks) == 0


def test_an_item_that_failed_in_the_pipelines_recrawls_its_request_instead_of_acking(
    clock: Clock, acked: list[str]
) -> None:
    failed: list[Request] = []
    acks = LeaseAcks(acked.append, clock.call_later, on_failed=failed.append)
    response = leased_response("7")
    acks.response_entered(response)
    asyncio.run(drain(acks.track_output(response, aiter_of({"a": 1}, {"b": 2}))))
    acks.item_failed(response=response)  # dedup/store gave up: the item is not durable
    clock.turn()
    assert failed == [] and acked == []  # the other item is still in the pipelines
    acks.item_done(response=response)
    clock.turn()
    assert acked == []  # never acked: an item of it is not durable
    assert failed == [response.request]
    assert len(acks) == 0


def test_a_recovered_stream_right_after_the_first_keeps_the_lease(
    acks: LeaseAcks, clock: Clock, acked: list[str]
) -> None:
    """A spider middleware recovering from an exception starts a second stream."""
    response = leased_response("2")
    acks.response_entered(response)

    async def both() -> None:
        await drain(acks.track_output(response, aiter_of()))
        # The recovered output starts in the same reactor turn the first one ended in.
        await drain(acks.track_output(response, aiter_of({"recovered": True})))

    asyncio.run(both())
    clock.turn()
    assert acked == []
    acks.item_done(response=response)
    clock.turn()
    assert acked == ["2"]


def test_a_callback_that_raised_with_nothing_to_iterate_is_acked_on_spider_error(
    acks: LeaseAcks, clock: Clock, acked: list[str]
) -> None:
    response = leased_response("3")
    acks.response_entered(response)
    acks.spider_error(failure=Failure(ValueError("boom")), response=response)
    clock.turn()
    assert acked == ["3"]


def test_a_download_failure_without_errback_is_acked_when_scrapy_gets_it_back(
    acks: LeaseAcks, clock: Clock, acked: list[str]
) -> None:
    failure = download_failure("4")
    assert acks.failure_output(failure, None) is failure  # Scrapy re-raises and logs it
    clock.turn()
    assert acked == ["4"]


def test_a_download_failure_errback_items_hold_the_lease_until_out_of_the_pipelines(
    acks: LeaseAcks, clock: Clock, acked: list[str]
) -> None:
    failure = download_failure("5")

    def errback(failure: Failure) -> Iterator[dict[str, int]]:
        yield {"partial": 1}

    items = list(acks.failure_output(failure, errback))
    assert items == [{"partial": 1}]
    clock.turn()
    assert acked == []
    acks.item_done(response=failure)  # item signals carry the failure as "response"
    clock.turn()
    assert acked == ["5"]


def test_an_errback_called_from_the_spider_middlewares_is_theirs(
    acks: LeaseAcks, clock: Clock, acked: list[str]
) -> None:
    """HttpError and friends: the errback's output then flows through LeaseAckMiddleware."""
    response = leased_response("6")
    acks.response_entered(response)
    failure = Failure(ValueError("HttpError"))
    failure.request = response.request  # type: ignore[attr-defined]
    assert acks.failure_output(failure, None) is failure
    clock.turn()
    assert acked == []
    asyncio.run(drain(acks.track_output(response, aiter_of())))
    clock.turn()
    assert acked == ["6"]


def test_a_request_copied_from_the_leased_one_does_not_carry_its_lease(acks: LeaseAcks) -> None:
    """Only retries/redirects replace a lease; a callback's copy would release it early."""
    response = leased_response("7")
    copy = response.request.replace(url="http://example.invalid/page-2")
    (output,) = asyncio.run(drain(acks.track_output(response, aiter_of(copy))))
    assert LEASE_META not in output.meta
    assert response.request.meta[LEASE_META] == "7"


def test_the_errback_wrapper_is_never_queued() -> None:
    class Owner(Spider):
        name = "owner"

        def on_error(self, failure: Failure) -> None:
            return None

    spider = Owner()
    request = Request("http://example.invalid/", errback=spider.on_error)
    wrap_errback(request, LeaseAcks(lambda lease_id: None, lambda *args: None))
    assert isinstance(request.errback, LeaseErrback)
    copy = request.replace(url="http://example.invalid/retry")  # a retry or redirect
    unwrap_errback(copy)
    assert copy.errback == spider.on_error
    assert copy.to_dict(spider=spider)["errback"] == "on_error"


def test_a_queued_request_is_encoded_as_scrapy_encodes_it() -> None:
    """The queue's own ``to_dict`` (no scan of the spider's methods) gives Scrapy's dict,
    and requests whose callbacks are not the spider's methods still go through Scrapy."""

    class Owner(Spider):
        name = "owner"

        def parse_page(self, response: Response) -> None:
            return None

        def on_error(self, failure: Failure) -> None:
            return None

    class Other:
        def parse(self, response: Response) -> None:
            return None

    spider = Owner()
    queue = LeasedQueue.__new__(LeasedQueue)
    queue.spider = spider
    requests = [
        Request("http://example.invalid/"),
        Request(
            "http://example.invalid/p?id=1",
            callback=spider.parse_page,
            errback=spider.on_error,
            method="POST",
            body=b"a=1",
            headers={"X-Test": "1"},
            cookies={"c": "v"},
            meta={"job_id": "j", "depth": 2},
            priority=-3,
            dont_filter=True,
            cb_kwargs={"page": 2},
            flags=["f"],
        ),
        Request("http://example.invalid/parse", callback=spider.parse),
        FormRequest("http://example.invalid/form", formdata={"q": "x"}, callback=spider.parse),
    ]
    for request in requests:
        assert queue.request_dict(request) == request.to_dict(spider=spider)
        decoded = queue.decode(queue.encode(request)[0])
        assert decoded.to_dict(spider=spider) == request.to_dict(spider=spider)
    with pytest.raises(ValueError):  # Scrapy's refusal: not a method of the spider
        queue.request_dict(Request("http://example.invalid/", callback=Other().parse))


# -- the scheduler refuses to run without what acks rely on ------------------------------

FRONTIER = {
    "REDIS_URL": "redis://127.0.0.1:1/0",  # never connected to by these tests
    "SCHEDULER": "crawlers.frontier.scheduler.LeasingScheduler",
    "SCHEDULER_QUEUE_CLASS": "crawlers.frontier.queue.LeasedQueue",
    "DUPEFILTER_CLASS": "crawlers.frontier.queue.JobDupeFilter",
    "SPIDER_MIDDLEWARES": {"crawlers.frontier.scheduler.LeaseAckMiddleware": 0},
}


def test_the_scheduler_starts_with_its_pieces() -> None:
    scheduler = LeasingScheduler.from_crawler(get_crawler(settings_dict=FRONTIER))
    assert isinstance(scheduler.df, JobDupeFilter)
    assert LeaseAckMiddleware.from_crawler(get_crawler(settings_dict=FRONTIER))


@pytest.mark.parametrize(
    ("override", "complaint"),
    [
        ({"SPIDER_MIDDLEWARES": {}}, "LeaseAckMiddleware"),
        (
            {
                "SPIDER_MIDDLEWARES": {
                    "crawlers.frontier.scheduler.LeaseAckMiddleware": 100,
                    "crawlers.runtime.middlewares.JobTagMiddleware": 10,
                }
            },
            "outermost",
        ),
        ({"DUPEFILTER_CLASS": "scrapy.dupefilters.RFPDupeFilter"}, "JobDupeFilter"),
    ],
)
def test_the_scheduler_refuses_to_start_without_its_pieces(
    override: dict[str, Any], complaint: str
) -> None:
    crawler = get_crawler(settings_dict={**FRONTIER, **override})
    with pytest.raises(FrontierConfigError, match=complaint):
        LeasingScheduler.from_crawler(crawler)


def test_the_ack_middleware_and_worker_extension_are_off_without_the_frontier() -> None:
    crawler = get_crawler(settings_dict={"REDIS_URL": None})
    assert not is_leasing_scheduler(load_object(crawler.settings["SCHEDULER"]))
    for component in (LeaseAckMiddleware, FrontierWorker):
        with pytest.raises(NotConfigured):
            component.from_crawler(crawler)


# -- a real crawl of a plain spider through every path ---------------------------------------


class EdgeSpider(Spider):
    """A plain scrapy.Spider: its start() requests go into the frontier."""

    name = "demo"  # the demo site's frontier keys; the site is the test's own DemoSite

    async def start(self) -> AsyncIterator[Any]:
        base = self.settings["DEMO_SITE_URL"]
        yield Request(f"{base}/", callback=self.parse_home)
        yield Request(f"{base}/no-such-page", callback=self.parse_home)  # 404, no errback
        yield Request(f"{base}/still-no-page", errback=self.on_failure)  # 404, errback
        yield Request("http://127.0.0.1:1/refused", errback=self.on_failure)  # download error
        yield Request("http://127.0.0.1:1/refused-plain")  # download error, no errback
        # A redirect loop (each redirect replaces the lease), then IgnoreRequest raised in
        # a downloader middleware's process_response: no middleware's process_exception.
        yield Request(f"{base}/edge/redirect-loop", errback=self.on_failure, dont_filter=True)
        yield Request(f"{base}/robots.txt", callback=self.parse_raises)
        yield Request(f"{base}/sitemap.xml", callback=self.parse_recovered)

    def item(self, kind: str, source: Any) -> dict[str, Any]:
        return {"kind": kind, "lease": source.request.meta[LEASE_META]}

    async def parse_home(self, response: Response) -> AsyncIterator[Any]:
        yield self.item("callback", response)
        await asyncio.sleep(0.2)  # the item leaves the pipelines before the output ends
        yield self.item("callback-late", response)
        yield response.follow("/cart", callback=self.parse_home)

    def on_failure(self, failure: Failure) -> Iterator[dict[str, Any]]:
        yield self.item(f"errback-{type(failure.value).__name__}", failure)

    def parse_raises(self, response: Response) -> Iterator[dict[str, Any]]:
        yield self.item("before-error", response)
        raise ValueError("a callback that fails half-way")

    async def parse_recovered(self, response: Response) -> AsyncIterator[Any]:
        yield self.item("before-recovery", response)
        await asyncio.sleep(0.3)  # that item is through before the exception
        raise RecoverMe(self.item("recovered", response))


class RecoverMe(Exception):
    pass


class RecoveringMiddleware:
    """A spider middleware (inner to LeaseAckMiddleware) that recovers with an item."""

    def process_spider_exception(self, response: Response, exception: Exception) -> Any:
        # By name: `scrapy runspider` loads this file a second time, as another module.
        if type(exception).__name__ == "RecoverMe":
            return [exception.args[0]]
        return None


class HeldLeasePipeline:
    """Records, after a while in the pipeline, whether its lease is still un-acked."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.server = redis.Redis.from_url(crawler.settings["REDIS_URL"])
        self.key = crawler.settings["TEST_ITEM_SINK_KEY"]

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> HeldLeasePipeline:
        return cls(crawler)

    async def process_item(self, item: Any) -> Any:
        await asyncio.sleep(0.05)
        scheduler = self.crawler.engine.scheduler
        assert is_leasing_scheduler(scheduler)
        fields = ItemAdapter(item).asdict()
        fields["held"] = scheduler.holds(str(fields["lease"]))
        self.server.rpush(self.key, json.dumps(fields))
        return item


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSite]:
    run_dir = tmp_path_factory.mktemp("acks-site")
    with DemoSite(run_dir=run_dir, products=12, name="acks-site") as server:
        yield server


def test_a_plain_spider_acks_every_lease_exactly_when_done(
    site: DemoSite, redis_server: RedisServer, tmp_path: Path
) -> None:
    client = redis_server.client()
    client.flushdb()
    log = tmp_path / "edge.log"
    module = "tests.crawlers.frontier.test_acks"
    settings = {
        "REDIS_URL": redis_server.url,
        "SCHEDULER": "crawlers.frontier.scheduler.LeasingScheduler",
        "SCHEDULER_QUEUE_CLASS": "crawlers.frontier.queue.LeasedQueue",
        "DUPEFILTER_CLASS": "crawlers.frontier.queue.JobDupeFilter",
        "JOB_ID": "edge-job",
        "DEMO_SITE_URL": site.url,
        "ROBOTSTXT_OBEY": False,
        "RETRY_TIMES": 1,
        "RETRY_BACKOFF_BASE": 0.1,
        "ITEM_PIPELINES": json.dumps({f"{module}.HeldLeasePipeline": 100}),
        "SPIDER_MIDDLEWARES": json.dumps(
            {
                "crawlers.frontier.scheduler.LeaseAckMiddleware": 0,
                f"{module}.RecoveringMiddleware": 950,
            }
        ),
        "TEST_ITEM_SINK_KEY": "items",
        "FRONTIER_IDLE_CLOSE_SECONDS": 1,
        "FRONTIER_HEARTBEAT_INTERVAL": 0.5,
        "LOG_FILE": str(log),
    }
    site.reset()
    assert run_edge_spider(settings) == 0, log_excerpt(log)

    items = [json.loads(raw) for raw in client.lrange("items", 0, -1)]
    kinds = sorted(item["kind"] for item in items)
    assert kinds == sorted(
        [
            "callback",
            "callback-late",
            "callback",  # /cart, followed from the home page
            "callback-late",
            "errback-HttpError",
            "errback-DownloadConnectionRefusedError",
            "errback-IgnoreRequest",
            "before-error",
            "before-recovery",
            "recovered",
        ]
    ), log_excerpt(log)
    # Nothing acked early: every item's lease was still held while it was in the pipeline.
    assert [item for item in items if not item["held"]] == []
    # Nothing left un-acked: a held lease would have been released back to the queue.
    frontier = RedisFrontier(client, "demo")
    assert (frontier.queued(), frontier.leased()) == (0, 0)
    text = log.read_text()
    assert "leases back to the frontier" not in text
    assert "'frontier/acked':" in text

    # A second worker of the same job: its start() requests were seen in this job.
    second = tmp_path / "second.log"
    assert run_edge_spider({**settings, "LOG_FILE": str(second)}) == 0, log_excerpt(second)
    hits = Counter(entry["path"] for entry in site.access_log())
    assert (hits["/"], hits["/cart"], hits["/no-such-page"], hits["/sitemap.xml"]) == (1, 1, 1, 1)
    assert client.llen("items") == len(items) + 1  # only the dont_filter redirect loop again
    client.flushdb()


def run_edge_spider(settings: dict[str, Any]) -> int:
    argv = [sys.executable, "-m", "scrapy", "runspider", __file__]
    for name, value in settings.items():
        argv += ["-s", f"{name}={value}"]
    return subprocess.run(argv, cwd=REPO_ROOT, timeout=180).returncode
