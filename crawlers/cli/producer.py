"""The producer: enqueue a job's start requests into the site's Redis frontier.

    python -m crawlers.cli.producer <site> [--job-id ID] [--base-url URL] [--redis-url URL]

Start entries come from the site's spider (``SiteSpider.start_entries``: its profile's
start paths and sitemaps), each tagged with the job id, and go to ``<site>:start_urls``
where workers lease them like any request; the job's layout (the id of the site's
accepted fingerprint baseline, ``core.recrawl.layouts``) goes to ``<site>:job:<job>:layout``, for
its re-crawl records. The spider is built the way a crawl builds
it (``from_crawler`` with the project's settings, e.g. DEMO_SITE_URL), so the producer
and the workers agree on the base URL. The Redis URL is ``--redis-url``, else the
project's REDIS_URL setting (from the environment, crawlers.runtime.environment). An unknown
site, a missing or malformed Redis URL, and a Redis that is unreachable or refuses the
credentials are one line and exit status 2, with nothing enqueued.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass

from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings, Settings
from scrapy.spiderloader import get_spider_loader
from scrapy.utils.project import get_project_settings

from core.config import OperatorError, check_redis_url
from core.frontier.queue import RedisFrontier
from core.recrawl.layouts import baseline_id
from core.redis_client import Client
from crawlers import defaults
from crawlers.commands import check_site
from crawlers.frontier.connect import connect_checked
from crawlers.runtime.jobs import new_job_id
from crawlers.spiders.base import SiteSpider


@dataclass(frozen=True)
class ProducedJob:
    site: str
    job_id: str
    entries: int


def spider_class(site: str, settings: BaseSettings | None = None) -> type[SiteSpider]:
    loader = get_spider_loader(settings or get_project_settings())
    cls = loader.load(site)
    if not issubclass(cls, SiteSpider):
        raise TypeError(f"spider {site!r} does not derive from SiteSpider")
    return cls


def produce(
    server: Client,
    site: str,
    *,
    job_id: str | None = None,
    base_url: str | None = None,
    settings: Settings | None = None,
) -> ProducedJob:
    """Enqueue ``site``'s start entries for a (new) job; returns what was enqueued.

    ``settings``: the crawl's Scrapy settings (default: the project's).
    """
    job_id = job_id or new_job_id(site)
    settings = settings or get_project_settings()
    cls = spider_class(site, settings)
    crawler = Crawler(cls, settings)
    spider = cls.from_crawler(crawler, job_id=job_id, base_url=base_url)
    assert isinstance(spider, SiteSpider)
    entries = [{**entry, "job_id": job_id} for entry in spider.start_entries()]
    # The site's own settings (its profile's [settings] table) decide, as for its workers;
    # the add-on applies crawlers.defaults to a crawl's settings, not to the project's.
    partitions = crawler.settings.getint("FRONTIER_PARTITIONS", defaults.FRONTIER_PARTITIONS)
    frontier = RedisFrontier.adopt(server, site, partitions)
    # The accepted baseline the job's re-crawl records belong to (core.recrawl.layouts): this
    # process ran the structure gate and any approval, its workers may not have.
    frontier.start_job(job_id, layout=baseline_id(site))
    frontier.push_start([json.dumps(entry) for entry in entries])
    return ProducedJob(site=site, job_id=job_id, entries=len(entries))


def main(argv: Sequence[str] | None = None) -> int:
    """The command line. Its mistakes (an unknown site, no or a malformed Redis URL, a
    Redis that is unreachable or refuses the credentials) are one line and exit status 2,
    checked before anything is enqueued."""
    parser = argparse.ArgumentParser(description="Enqueue a site's start requests for a job.")
    parser.add_argument("site")
    parser.add_argument("--job-id")
    parser.add_argument("--base-url")
    parser.add_argument("--redis-url", help="default: the REDIS_URL setting ($REDIS_URL)")
    args = parser.parse_args(argv)
    settings = get_project_settings()
    check_site(get_spider_loader(settings), args.site)
    redis_url = check_redis_url(args.redis_url, "--redis-url") or settings.get("REDIS_URL")
    if not redis_url:
        raise OperatorError(
            "REDIS_URL is not set: the producer enqueues into the Redis frontier; set "
            "REDIS_URL like redis://[:password@]host:6379/0 or pass --redis-url"
        )
    settings.set("REDIS_URL", redis_url, priority="cmdline")
    server = connect_checked(
        redis_url,
        "start Redis or point REDIS_URL (or --redis-url) at it; nothing enqueued",
        cluster=settings.getbool("REDIS_CLUSTER"),
    )
    job = produce(server, args.site, job_id=args.job_id, base_url=args.base_url, settings=settings)
    print(f"enqueued {job.entries} start entries for {job.site} job {job.job_id}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
