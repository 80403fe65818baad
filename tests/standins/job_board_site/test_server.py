"""The jobs board served for real (``python -m standins.job_board_site`` through
``JobBoardSite``)."""

from __future__ import annotations

import http.client
import json
import urllib.robotparser
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import extruct
import pytest
from parsel import Selector
from protego import Protego
from scrapy.utils.sitemap import Sitemap, sitemap_urls_from_robots

from harness.job_board_site import JobBoardSite
from standins.job_board_site.board import Board, Job

SITEMAP_NS = {"sm": "http://www.sitemaps.org/schemas/sitemap/0.9"}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JobBoardSite]:
    run_dir = Path(tmp_path_factory.mktemp("job-board-site"))
    with JobBoardSite(run_dir=run_dir, access_log=run_dir / "jobs-access.jsonl") as server:
        yield server


@pytest.fixture(scope="module")
def board(site: JobBoardSite) -> Board:
    return site.board()


class Page:
    def __init__(self, status: int, headers: dict[str, str], body: bytes, url: str) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.url = url

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")

    @property
    def selector(self) -> Selector:
        return Selector(text=self.text)

    def jsonld(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = extruct.extract(
            self.text, base_url=self.url, syntaxes=["json-ld"], uniform=True
        )["json-ld"]
        return found


def fetch(site: JobBoardSite, path: str, method: str = "GET", **headers: str) -> Page:
    """One request without following redirects."""
    connection = http.client.HTTPConnection(site.host, site.port, timeout=30)
    try:
        connection.request(method, path, headers=headers)
        response = connection.getresponse()
        body = response.read()
        headers = {k.lower(): v for k, v in response.getheaders()}
        return Page(response.status, headers, body, site.url + path)
    finally:
        connection.close()


def locs(page: Page) -> list[str]:
    root = ET.fromstring(page.body)
    return [loc.text or "" for loc in root.iterfind(".//sm:loc", SITEMAP_NS)]


def postings(page: Page) -> list[dict[str, Any]]:
    return [node for node in page.jsonld() if node.get("@type") == "JobPosting"]


# -- robots and sitemaps --------------------------------------------------------------------


def test_robots_names_the_sitemap_index_and_keeps_crawlers_off_applications(
    site: JobBoardSite, board: Board
) -> None:
    page = fetch(site, "/robots.txt")
    assert page.status == 200
    assert page.headers["content-type"] == "text/plain; charset=utf-8"
    assert f"Sitemap: {site.url}/sitemap_index.xml" in page.text.splitlines()
    rules = urllib.robotparser.RobotFileParser()
    rules.parse(page.text.splitlines())
    job = board.jobs[0]
    assert rules.can_fetch("AnyBot", site.url + job.path)
    assert not rules.can_fetch("AnyBot", f"{site.url}/apply/{job.job_id}")
    assert rules.site_maps() == [f"{site.url}/sitemap_index.xml"]


def test_the_sitemap_index_leads_to_every_job_exactly_once(
    site: JobBoardSite, board: Board
) -> None:
    index = fetch(site, "/sitemap_index.xml")
    assert index.status == 200 and index.headers["content-type"].startswith("application/xml")
    assert ET.fromstring(index.body).tag == f"{{{SITEMAP_NS['sm']}}}sitemapindex"
    sitemaps = locs(index)
    assert sitemaps == [
        f"{site.url}/sitemaps/jobs-1.xml",
        f"{site.url}/sitemaps/jobs-2.xml",
        f"{site.url}/sitemaps/jobs-3.xml",
        f"{site.url}/sitemaps/companies.xml",
    ]
    assert len(ET.fromstring(index.body).findall(".//sm:lastmod", SITEMAP_NS)) == 4
    job_urls: list[str] = []
    for url in sitemaps[:-1]:
        page = fetch(site, url.removeprefix(site.url))
        assert page.status == 200
        urls = locs(page)
        assert 0 < len(urls) <= 100
        lastmods = ET.fromstring(page.body).findall(".//sm:lastmod", SITEMAP_NS)
        assert len(lastmods) == len(urls)
        job_urls += urls
    assert sorted(job_urls) == sorted(site.url + job.path for job in board.jobs)
    assert len(set(job_urls)) == len(job_urls) == 300
    companies = locs(fetch(site, "/sitemaps/companies.xml"))
    assert companies == [site.url + company.path for company in board.companies]


def test_scrapys_own_parsers_read_robots_and_sitemaps(site: JobBoardSite, board: Board) -> None:
    """What a Scrapy crawl uses (RobotsTxtMiddleware's Protego, SitemapSpider's parser)."""
    robots = fetch(site, "/robots.txt")
    assert list(sitemap_urls_from_robots(robots.body)) == [f"{site.url}/sitemap_index.xml"]
    rules = Protego.parse(robots.text)
    assert not rules.can_fetch(f"{site.url}/apply/J-00001", "Scrapy")
    assert rules.can_fetch(site.url + board.jobs[0].path, "Scrapy")
    index = Sitemap(fetch(site, "/sitemap_index.xml").body)
    assert index.type == "sitemapindex"
    urls = []
    for entry in index:
        part = Sitemap(fetch(site, entry["loc"].removeprefix(site.url)).body)
        assert part.type == "urlset"
        urls += [url["loc"] for url in part if "/job/" in url["loc"]]
    assert sorted(urls) == sorted(site.url + job.path for job in board.jobs)


# -- detail pages ------------------------------------------------------------------------


def expected_jsonld(job: Job, base: str) -> dict[str, Any]:
    """What a posting's JobPosting must say, built from the generator alone."""
    expected: dict[str, Any] = {
        "title": job.title,
        "description": "".join(f"<p>{p}</p>" for p in job.paragraphs),
        "identifier": {"@type": "PropertyValue", "name": job.company, "value": job.job_id},
        "datePosted": job.date_posted,
        "validThrough": job.valid_through,
        "employmentType": job.employment_type,
        "hiringOrganization": {
            "@type": "Organization",
            "name": job.company,
            "sameAs": base + job.company_path,
        },
        "jobLocation": {
            "@type": "Place",
            "address": {
                "@type": "PostalAddress",
                "addressLocality": job.city,
                "addressRegion": job.region,
                "addressCountry": job.country,
            },
        },
        "skills": ", ".join(job.skills),
        "url": base + job.path,
    }
    if job.remote:
        expected["jobLocationType"] = "TELECOMMUTE"
    if job.salary_min is not None:
        expected["baseSalary"] = {
            "@type": "MonetaryAmount",
            "currency": job.salary_currency,
            "value": {
                "@type": "QuantitativeValue",
                "minValue": job.salary_min,
                "maxValue": job.salary_max,
                "unitText": job.salary_period,
            },
        }
    return expected


def test_every_posting_carries_its_jobposting_and_html_only_facts(
    site: JobBoardSite, board: Board
) -> None:
    for job in board.jobs:
        page = fetch(site, job.path)
        assert page.status == 200, job.path
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        [node] = postings(page)
        got = {key: node.get(key) for key in expected_jsonld(job, site.url)}
        assert got == expected_jsonld(job, site.url), job.job_id
        assert ("jobLocationType" in node) == job.remote
        assert ("baseSalary" in node) == (job.salary_min is not None)
        # What only the HTML says.
        html = page.selector
        assert html.css("h1.job-title::text").get() == job.title
        facts = dict(
            zip(
                html.css("table.job-facts th::text").getall(),
                html.css("table.job-facts td::text").getall(),
                strict=True,
            )
        )
        assert facts["Experience level"] == job.experience_level
        assert facts["Team"] == job.team
        assert facts["Category"] == job.category
        assert facts["Remote"] == ("Yes" if job.remote else "No")
        assert html.css("ul.skills li.skill::text").getall() == list(job.skills)
        assert html.css("a.company-link::attr(href)").get() == job.company_path
        assert html.css("a.company-link::text").get() == job.company
        paragraphs = html.css("section.job-description p::text").getall()
        assert paragraphs == list(job.paragraphs)
        if job.company_rating is None:
            assert html.css("span.rating") == []
            assert html.css("span.no-rating")
        else:
            assert len(html.css("span.rating i.star.filled")) == job.company_rating
            assert len(html.css("span.rating i.star")) == 5


def test_the_organization_on_company_pages_is_no_posting(site: JobBoardSite, board: Board) -> None:
    for company in board.companies:
        page = fetch(site, company.path)
        assert page.status == 200
        assert postings(page) == []
        [organization] = [n for n in page.jsonld() if n.get("@type") == "Organization"]
        assert organization["name"] == company.name
        assert organization["url"] == site.url + company.path
        links = page.selector.css("a.job-link::attr(href)").getall()
        assert links == [job.path for job in board.by_company[company.slug]]
        filled = len(page.selector.css("span.rating i.star.filled"))
        assert filled == (company.rating or 0)


# -- home and listings ---------------------------------------------------------------------


def test_home_links_every_category_and_has_no_posting(site: JobBoardSite, board: Board) -> None:
    page = fetch(site, "/")
    assert page.status == 200
    links = page.selector.css("a.category-link::attr(href)").getall()
    assert links == [f"/jobs/{category.slug}" for category in board.categories]
    assert postings(page) == []


def test_next_links_cover_every_job_of_each_category_once(site: JobBoardSite, board: Board) -> None:
    for category in board.categories:
        path: str | None = f"/jobs/{category.slug}"
        seen: list[str] = []
        pages = 0
        while path is not None:
            page = fetch(site, path)
            assert page.status == 200, path
            assert postings(page) == []
            cards = page.selector.css("a.job-link::attr(href)").getall()
            assert 0 < len(cards) <= 20
            seen += cards
            pages += 1
            pager = page.selector.css("nav.pager a::attr(href)").getall()
            path = page.selector.css("a[rel=next]::attr(href)").get()
            assert path is None or path in pager
        assert seen == [job.path for job in board.by_category[category.slug]]
        assert pages == -(-len(seen) // 20)
        # The pager of the first page links every page.
        first = fetch(site, f"/jobs/{category.slug}").selector
        numbered = {href for href in first.css("nav.pager a::attr(href)").getall()}
        assert numbered >= {f"/jobs/{category.slug}?page={n}" for n in range(2, pages + 1)}


@pytest.mark.parametrize(
    "path",
    [
        "/nope",
        "/job/J-99999-nothing",
        "/job/J-00001-not-its-slug",
        "/jobs/unknown",
        "/jobs/engineering?page=0",
        "/jobs/engineering?page=99",
        "/jobs/engineering?page=two",
        "/company/nobody",
        "/sitemaps/jobs-9.xml",
        "/sitemap.xml",
        "/apply/J-99999",
    ],
)
def test_unknown_paths_are_404(site: JobBoardSite, path: str) -> None:
    page = fetch(site, path)
    assert page.status == 404
    assert page.headers["content-type"] == "text/html; charset=utf-8"


# -- serving ---------------------------------------------------------------------------------


def test_absolute_urls_follow_the_host_header(site: JobBoardSite, board: Board) -> None:
    job = board.jobs[3]
    page = fetch(site, job.path, Host="jobs.example.test:8443")
    [node] = postings(page)
    assert node["url"] == "http://jobs.example.test:8443" + job.path
    robots = fetch(site, "/robots.txt", Host="jobs.example.test:8443")
    assert "Sitemap: http://jobs.example.test:8443/sitemap_index.xml" in robots.text


def test_head_answers_headers_only(site: JobBoardSite, board: Board) -> None:
    page = fetch(site, board.jobs[0].path, method="HEAD")
    assert page.status == 200 and page.body == b""
    assert int(page.headers["content-length"]) == len(fetch(site, board.jobs[0].path).body)


def test_the_access_log_records_site_requests_only(site: JobBoardSite, board: Board) -> None:
    site.clear_access_log()
    job = board.jobs[1]
    body = fetch(site, job.path, **{"User-Agent": "log-test"}).body
    fetch(site, "/missing")
    entries = site.access_log()
    assert [(e["i"], e["path"], e["status"]) for e in entries] == [
        (0, job.path, 200),
        (1, "/missing", 404),
    ]
    assert entries[0]["bytes"] == len(body) and entries[0]["user_agent"] == "log-test"
    assert site.access_log(since=1)[0]["path"] == "/missing"
    assert site.access_log_path is not None
    lines = site.access_log_path.read_text().splitlines()
    assert json.loads(lines[-1])["path"] == "/missing"
