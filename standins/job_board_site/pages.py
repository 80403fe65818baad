"""The jobs board's pages, rendered from a ``Board`` (plain strings, no templates).

Built unlike the demo shop on purpose: JobPosting JSON-LD on detail pages only, facts
that only the HTML carries (experience level, team, category, the company's stars), a
sitemap index at ``/sitemap_index.xml`` and pages under ``/jobs/``, ``/job/`` and
``/company/``.
"""

from __future__ import annotations

import json
import math
from html import escape
from typing import Any

from standins.job_board_site.board import Board, Company, Job
from standins.job_board_site.vocabulary import EMPLOYMENT_LABELS

PAGE_SIZE = 20  # postings per category listing page
SITEMAP_CHUNK = 100  # URLs per jobs sitemap
CURRENCY_SIGNS = {"EUR": "\N{EURO SIGN}", "GBP": "\N{POUND SIGN}", "USD": "$"}
PERIOD_WORDS = {"YEAR": "a year", "MONTH": "a month", "HOUR": "an hour"}


def page_count(n_jobs: int) -> int:
    return max(1, math.ceil(n_jobs / PAGE_SIZE))


def listing_path(slug: str, page: int = 1) -> str:
    return f"/jobs/{slug}" if page == 1 else f"/jobs/{slug}?page={page}"


def sitemap_chunks(board: Board) -> int:
    return max(1, math.ceil(len(board.jobs) / SITEMAP_CHUNK))


def _json_for_script(data: Any) -> str:
    # "</" inside a <script> would end it early; "<\/" is the same JSON string.
    return json.dumps(data, ensure_ascii=False, indent=2).replace("</", "<\\/")


def _document(title: str, body: str, head: str = "") -> str:
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{escape(title)} - Jobboard</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
{head}
</head>
<body>
<header class="masthead"><a class="brand" href="/">Jobboard</a>
<span class="tagline">Hand-picked jobs across Europe and the US</span></header>
<main>
{body}
</main>
<footer class="site-footer"><p>&copy; Jobboard. All postings are fictional.</p></footer>
</body>
</html>
"""


def _location(job: Job) -> str:
    return f"{job.city}, {job.region}, {job.country}"


def _salary_text(job: Job) -> str:
    if job.salary_min is None or job.salary_max is None or job.salary_currency is None:
        return "Not disclosed"
    sign = CURRENCY_SIGNS[job.salary_currency]
    decimals = 2 if job.salary_period == "HOUR" else 0
    low, high = f"{job.salary_min:,.{decimals}f}", f"{job.salary_max:,.{decimals}f}"
    return f"{sign}{low} - {sign}{high} {PERIOD_WORDS[job.salary_period or 'YEAR']}"


def stars(rating: int | None) -> str:
    """Filled and empty stars (``span.rating``); an unrated company gets a note instead."""
    if rating is None:
        return '<span class="no-rating">Not rated yet</span>'
    icons = '<i class="star filled"></i>' * rating + '<i class="star"></i>' * (5 - rating)
    return f'<span class="rating" title="{rating} out of 5">{icons}</span>'


# -- home and listings ----------------------------------------------------------------


def home(board: Board) -> str:
    links = "\n".join(
        f'<li><a class="category-link" href="{category.path}">{escape(category.name)}</a> '
        f'<span class="count">({len(board.by_category[category.slug])} jobs)</span></li>'
        for category in board.categories
    )
    body = f"""<h1 class="page-title">Find your next job</h1>
<section class="categories"><h2>Browse by category</h2>
<ul class="category-list">
{links}
</ul></section>
<p class="about">{len(board.jobs)} open positions at {len(board.companies)} companies.</p>"""
    return _document("Jobs", body)


def _card(job: Job) -> str:
    remote = ' <span class="badge">Remote</span>' if job.remote else ""
    return f"""<li class="job-card">
<a class="job-link" href="{job.path}">{escape(job.title)}</a>
<span class="card-company">{escape(job.company)}</span>
<span class="card-location">{escape(job.city)}{remote}</span>
<time class="card-date" datetime="{job.date_posted}">{job.date_posted}</time>
</li>"""


def _pager(slug: str, page: int, pages: int) -> str:
    links = []
    if page > 1:
        links.append(f'<a rel="prev" href="{listing_path(slug, page - 1)}">Previous</a>')
    for number in range(1, pages + 1):
        if number == page:
            links.append(f'<span class="current">{number}</span>')
        else:
            links.append(f'<a href="{listing_path(slug, number)}">{number}</a>')
    if page < pages:
        links.append(f'<a rel="next" href="{listing_path(slug, page + 1)}">Next</a>')
    return '<nav class="pager">' + " ".join(links) + "</nav>"


def listing(board: Board, slug: str, page: int) -> str | None:
    """A category's page ``page`` (None: no such category or page)."""
    category = board.category_by_slug.get(slug)
    if category is None:
        return None
    jobs = board.by_category[slug]
    pages = page_count(len(jobs))
    if not 1 <= page <= pages:
        return None
    shown = jobs[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    cards = "\n".join(_card(job) for job in shown)
    body = f"""<nav class="breadcrumbs"><a href="/">Jobs</a> / <span>{escape(category.name)}</span>
</nav>
<h1 class="page-title">{escape(category.name)} jobs</h1>
<p class="results">{len(jobs)} jobs, page {page} of {pages}</p>
<ul class="job-list">
{cards}
</ul>
{_pager(slug, page, pages)}"""
    return _document(f"{category.name} jobs, page {page}", body)


# -- a posting ---------------------------------------------------------------------------


def job_jsonld(job: Job, base: str) -> dict[str, Any]:
    """The schema.org JobPosting of a posting (absolute URLs under ``base``)."""
    data: dict[str, Any] = {
        "@context": "https://schema.org/",
        "@type": "JobPosting",
        "title": job.title,
        "description": description_html(job),
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
        data["jobLocationType"] = "TELECOMMUTE"
        data["applicantLocationRequirements"] = {"@type": "Country", "name": job.country}
    if job.salary_min is not None:
        data["baseSalary"] = {
            "@type": "MonetaryAmount",
            "currency": job.salary_currency,
            "value": {
                "@type": "QuantitativeValue",
                "minValue": job.salary_min,
                "maxValue": job.salary_max,
                "unitText": job.salary_period,
            },
        }
    return data


def description_html(job: Job) -> str:
    return "".join(f"<p>{escape(paragraph)}</p>" for paragraph in job.paragraphs)


def _fact(label: str, value: str) -> str:
    return f"<tr><th>{label}</th><td>{escape(value)}</td></tr>"


def job_page(board: Board, job_id: str, slug: str, base: str) -> str | None:
    """A posting's page (None: no such posting, or the slug is not its own)."""
    job = board.by_id.get(job_id)
    if job is None or job.slug != slug:
        return None
    category = board.category_by_slug[job.category_slug]
    head = (
        f'<link rel="canonical" href="{base}{job.path}">\n'
        f'<script type="application/ld+json">\n{_json_for_script(job_jsonld(job, base))}\n'
        "</script>"
    )
    facts = "\n".join(
        (
            _fact("Experience level", job.experience_level),
            _fact("Team", job.team),
            _fact("Category", job.category),
            _fact("Employment type", EMPLOYMENT_LABELS[job.employment_type]),
            _fact("Remote", "Yes" if job.remote else "No"),
            _fact("Salary", _salary_text(job)),
            _fact("Posted", job.date_posted),
            _fact("Apply by", job.valid_through),
        )
    )
    skills = "\n".join(f'<li class="skill">{escape(skill)}</li>' for skill in job.skills)
    paragraphs = "\n".join(f"<p>{escape(paragraph)}</p>" for paragraph in job.paragraphs)
    body = f"""<nav class="breadcrumbs"><a href="/">Jobs</a> /
<a href="{category.path}">{escape(category.name)}</a> / <span>{escape(job.title)}</span></nav>
<article class="job-posting">
<h1 class="job-title">{escape(job.title)}</h1>
<div class="job-company"><a class="company-link" href="{job.company_path}">\
{escape(job.company)}</a> {stars(job.company_rating)}</div>
<p class="job-location">{escape(_location(job))}</p>
<table class="job-facts">
{facts}
</table>
<section class="job-skills"><h2>Skills</h2>
<ul class="skills">
{skills}
</ul></section>
<section class="job-description"><h2>About the role</h2>
{paragraphs}
</section>
<p><a class="apply-button" rel="nofollow" href="/apply/{job.job_id}">Apply now</a></p>
</article>"""
    return _document(f"{job.title} at {job.company}", body, head)


# -- companies ---------------------------------------------------------------------------


def organization_jsonld(company: Company, base: str) -> dict[str, Any]:
    return {
        "@context": "https://schema.org/",
        "@type": "Organization",
        "name": company.name,
        "url": base + company.path,
        "description": company.about,
        "address": {
            "@type": "PostalAddress",
            "addressLocality": company.city,
            "addressRegion": company.region,
            "addressCountry": company.country,
        },
    }


def company_page(board: Board, slug: str, base: str) -> str | None:
    company = board.company_by_slug.get(slug)
    if company is None:
        return None
    head = (
        f'<link rel="canonical" href="{base}{company.path}">\n'
        f'<script type="application/ld+json">\n'
        f"{_json_for_script(organization_jsonld(company, base))}\n</script>"
    )
    jobs = board.by_company[slug]
    cards = "\n".join(_card(job) for job in jobs)
    body = f"""<nav class="breadcrumbs"><a href="/">Jobs</a> / <span>Companies</span></nav>
<section class="company-profile">
<h1 class="company-name">{escape(company.name)}</h1>
<div class="company-rating">{stars(company.rating)}</div>
<p class="company-about">{escape(company.about)}</p>
<p class="company-location">{escape(company.city)}, {escape(company.country)}</p>
</section>
<h2>Open positions ({len(jobs)})</h2>
<ul class="job-list">
{cards}
</ul>"""
    return _document(company.name, body, head)


def apply_page(board: Board, job_id: str) -> str | None:
    job = board.by_id.get(job_id)
    if job is None:
        return None
    body = f"""<h1 class="page-title">Apply: {escape(job.title)}</h1>
<form class="apply-form" method="post" action="/apply/{job.job_id}">
<label>Name <input name="name"></label> <label>CV <input type="file" name="cv"></label>
<button type="submit">Send</button></form>"""
    return _document(f"Apply for {job.title}", body)


def not_found() -> str:
    return _document("Not found", '<h1 class="page-title">Page not found</h1>')


# -- robots and sitemaps -------------------------------------------------------------------


def robots_txt(base: str) -> str:
    return f"""User-agent: *
# Applications and test hooks are not for crawlers.
Disallow: /apply/
Disallow: /__control

Sitemap: {base}/sitemap_index.xml
"""


def _chunk(board: Board, number: int) -> tuple[Job, ...]:
    return board.jobs[(number - 1) * SITEMAP_CHUNK : number * SITEMAP_CHUNK]


def _newest(jobs: tuple[Job, ...]) -> str:
    return max(job.date_posted for job in jobs)


def sitemap_index(board: Board, base: str) -> str:
    entries = [
        f"<sitemap><loc>{base}/sitemaps/jobs-{number}.xml</loc>"
        f"<lastmod>{_newest(_chunk(board, number))}</lastmod></sitemap>"
        for number in range(1, sitemap_chunks(board) + 1)
    ]
    entries.append(
        f"<sitemap><loc>{base}/sitemaps/companies.xml</loc>"
        f"<lastmod>{_newest(board.jobs)}</lastmod></sitemap>"
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        + "\n".join(entries)
        + "\n</sitemapindex>\n"
    )


def _urlset(entries: list[tuple[str, str]]) -> str:
    urls = "\n".join(
        f"<url><loc>{escape(loc)}</loc><lastmod>{lastmod}</lastmod></url>"
        for loc, lastmod in entries
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        f"{urls}\n</urlset>\n"
    )


def job_board_sitemap(board: Board, number: int, base: str) -> str | None:
    if not 1 <= number <= sitemap_chunks(board):
        return None
    return _urlset([(base + job.path, job.date_posted) for job in _chunk(board, number)])


def companies_sitemap(board: Board, base: str) -> str:
    return _urlset(
        [
            (base + company.path, _newest(board.by_company[company.slug]))
            for company in board.companies
        ]
    )
