"""Spider and downloader middlewares of the platform."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any

from itemadapter import ItemAdapter, is_item
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from crawlers.runtime.jobs import JOB_META


class JobTagMiddleware:
    """Tags every request and item a callback yields with the job it belongs to.

    The job id travels in ``request.meta["job_id"]`` from the producer's start entries
    to every follow-up request, so a worker serving several jobs over its life (always-on)
    attributes each item to the right one.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> JobTagMiddleware:
        return cls(crawler)

    def _job_of(self, response: Response | None) -> str | None:
        if response is not None:
            job_id = response.meta.get(JOB_META)
            if job_id:
                return str(job_id)
        return getattr(self.crawler.spider, "job_id", None)

    def _tag(self, output: Any, job_id: str | None) -> Any:
        if job_id is None:
            return output
        if isinstance(output, Request):
            output.meta.setdefault(JOB_META, job_id)
        elif is_item(output):
            adapter = ItemAdapter(output)
            if "job_id" in adapter.field_names() and not adapter.get("job_id"):
                adapter["job_id"] = job_id
        return output

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterable[Any]:
        job_id = self._job_of(response)
        for output in result:
            yield self._tag(output, job_id)

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        job_id = self._job_of(response)
        async for output in result:
            yield self._tag(output, job_id)
