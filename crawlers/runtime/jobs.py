"""The job and site a request or item belongs to: shared by the frontier, the fetch stack,
the pipelines and the re-crawl components, so it sits below all of them."""

from __future__ import annotations

import time
import uuid
from typing import Any

from scrapy.crawler import Crawler

# The job a request belongs to travels in its meta under this key (docs/frontier.md).
JOB_META = "job_id"


def new_job_id(site: str) -> str:
    """A sortable, unique job id: ``<site>-<UTC timestamp>-<random>``."""
    return f"{site}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{uuid.uuid4().hex[:6]}"


def site_of(crawler: Crawler) -> str:
    spider = crawler.spider
    if spider is None:
        raise RuntimeError("the pipelines need an open spider")
    return str(spider.name)


def job_of(fields: dict[str, Any], crawler: Crawler) -> str | None:
    """The item's job (JobTagMiddleware sets it), else the spider's."""
    job_id = fields.get("job_id") or getattr(crawler.spider, "job_id", None)
    return str(job_id) if job_id else None
