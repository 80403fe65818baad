"""vacancies: a job board without structured data, listing -> detail. Its class names say
nothing of the data (``li.job_li``, ``a.job_link``, ``h1.display_4``, ``p.lead``,
``div.text_justify``); the facts of a posting are ``<dt>``/``<dd>`` rows ("Salary range"
``£40,000 - £55,000 per year`` (an en dash), "Job type" Full-time, "Posted" 12 March 2025, "Closing
date", "Reference"). The whole board pages through ``/jobs?page=N`` (numbered links and a
"»" link labelled "Next page"); company pages list their own postings."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from standins.plain_sites.site import (
    Built,
    Catalog,
    Pager,
    Truth,
    document,
    esc,
    number,
    paragraphs,
)
from standins.plain_sites.words import CITIES_UK, slug

TITLES = (
    "Data Engineer", "Nurse Practitioner", "Site Manager", "Payroll Officer", "Chef de Partie",
    "Frontend Developer", "Warehouse Supervisor", "Solicitor", "Marketing Executive",
    "Maths Teacher", "HGV Driver", "Quantity Surveyor",
)  # fmt: skip
LEVELS = ("Junior", "Mid-level", "Senior", "Lead")
COMPANIES = (
    "Acme Logistics Ltd", "Brightwater Health", "Castle & Keane LLP", "Dovetail Software",
    "Evergreen Schools Trust", "Fenwick Construction", "Greenleaf Foods", "Harbour Media",
)  # fmt: skip
TYPES = {
    "Full-time": "FULL_TIME",
    "Part-time": "PART_TIME",
    "Contract": "CONTRACTOR",
    "Temporary": "TEMPORARY",
}
PERIODS = {"per year": "YEAR", "per month": "MONTH", "per hour": "HOUR"}
SKILLS = ("Python", "SQL", "Excel", "Customer service", "Leadership", "AutoCAD", "Sage", "Driving")
DUTIES = (
    "You will join a friendly team that values getting things right.",
    "The role reports to the head of department and covers two sites.",
    "We offer flexible hours, 25 days of holiday and a pension scheme.",
    "Training is provided, and there is a clear path to promotion.",
    "Applicants must have the right to work in the United Kingdom.",
    "You will plan your own week and keep the records up to date.",
    "Some evening and weekend work is required during busy periods.",
)  # fmt: skip
EPOCH = dt.date(2025, 3, 1)
PER_PAGE = 20


@dataclass(frozen=True)
class Job:
    jid: int
    title: str
    company: str
    city: str
    kind: str
    salary: tuple[int, int, str] | None  # min, max, period words
    posted: dt.date
    closes: dt.date
    level: str
    skills: tuple[str, ...]
    description: tuple[str, ...]

    @property
    def path(self) -> str:
        return f"/job/{self.jid}"


def jobs(seed: int, count: int) -> list[Job]:
    rng = random.Random(seed)
    out = []
    for n in range(count):
        period = rng.choice(list(PERIODS))
        low = {"per year": rng.randint(20, 70) * 1000, "per month": rng.randint(15, 50) * 100,
               "per hour": rng.randint(11, 40)}[period]  # fmt: skip
        posted = EPOCH - dt.timedelta(days=n // 3)
        level = rng.choice(LEVELS)
        out.append(
            Job(
                jid=1000 + n,
                title=f"{level} {rng.choice(TITLES)}" if rng.random() < 0.5 else rng.choice(TITLES),
                company=rng.choice(COMPANIES),
                city=rng.choice(CITIES_UK),
                kind=rng.choice(list(TYPES)),
                salary=(low, low + low // 4, period) if rng.random() < 0.75 else None,
                posted=posted,
                closes=posted + dt.timedelta(days=rng.choice((14, 21, 30, 45))),
                level=level,
                skills=tuple(rng.sample(SKILLS, rng.randint(2, 4))),
                description=tuple(rng.sample(DUTIES, rng.randint(3, 5))),
            )
        )
    return out


def long_date(day: dt.date) -> str:
    return f"{day.day} {day:%B %Y}"


def _page(title: str, body: str) -> str:
    header = (
        '<div class="navbar navbar_dark"><a class="navbar_brand" href="/">Vacancies.uk</a>'
        '<a class="nav_link" href="/jobs">All jobs</a><a class="nav_link" href="/employers">'
        'Employers</a><a class="nav_link" href="/login">Sign in</a></div>'
    )
    footer = '<div class="footer_bar"><p>© Vacancies.uk</p><a href="/privacy">Privacy</a></div>'
    return document(
        f"{title} - Vacancies.uk", f'{header}<div class="container_lg">{body}</div>{footer}',
        lang="en-GB",
    )  # fmt: skip


def _card(job: Job) -> str:
    return (
        f'<li class="job_li"><a class="job_link" href="{job.path}">{esc(job.title)}</a>'
        f'<span class="small_muted">{esc(job.company)}</span>'
        f'<span class="small_muted">{esc(job.city)}</span>'
        f'<span class="small_muted">{job.posted:%d %b %Y}</span></li>'
    )


def _list(title: str, items: list[Job], page: int, base: str) -> str | None:
    pager = Pager.of(len(items), page, PER_PAGE)
    if pager is None:
        return None
    links = "".join(
        f'<a class="pg" href="{base}?page={n}">{n}</a>' if n != page else f"<b>{n}</b>"
        for n in range(max(1, page - 3), min(pager.pages, page + 3) + 1)
    )
    if page < pager.pages:
        links += f'<a class="pg" aria-label="Next page" href="{base}?page={page + 1}">»</a>'
    cards = "".join(_card(job) for job in pager.window(items))
    body = (
        f'<h2 class="h_4">{esc(title)}</h2><p>{len(items)} jobs</p>'
        f'<ul class="job_list">{cards}</ul><div class="pg_row">{links}</div>'
    )
    return _page(title, body)


def _job(job: Job) -> str:
    facts = [("Location", job.city)]
    if job.salary:
        low, high, period = job.salary
        facts.append(("Salary range", f"£{low:,} \u2013 £{high:,} {period}"))
    else:
        facts.append(("Salary range", "Competitive"))
    facts += [
        ("Job type", job.kind),
        ("Experience", job.level),
        ("Posted", long_date(job.posted)),
        ("Closing date", long_date(job.closes)),
        ("Reference", f"VAC-{job.jid}"),
    ]
    rows = "".join(f"<dt>{k}</dt><dd>{esc(v)}</dd>" for k, v in facts)
    skills = "".join(f"<li>{esc(s)}</li>" for s in job.skills)
    body = (
        f'<div class="row_g3"><div class="col_md_8"><h1 class="display_4">{esc(job.title)}</h1>'
        f'<p class="lead"><a href="/company/{slug(job.company)}">{esc(job.company)}</a></p>'
        f'<dl class="row_dl">{rows}</dl>'
        f'<div class="text_justify">{paragraphs(job.description)}</div>'
        f'<h3>Skills</h3><ul class="list_inline">{skills}</ul>'
        f'<a class="btn_primary" href="/apply/{job.jid}">Apply now</a></div>'
        '<div class="col_md_4"><div class="card_box"><p>Get jobs like this by email.</p>'
        "</div></div></div>"
    )
    return _page(job.title, body)


def build(seed: int, count: int) -> Built:
    items = jobs(seed, count)
    catalog = Catalog()
    for job in items:
        catalog.add(job.path, job, slug(job.company))

    def render(path: str, query: dict[str, list[str]]) -> str | None:
        if path == "/":
            latest = "".join(_card(job) for job in items[:5])
            body = (
                '<div class="hero_box"><h1 class="display_3">Find your next job</h1>'
                '<a class="btn_lg" href="/jobs">Browse all jobs</a></div>'
                f'<h2 class="h_4">Latest</h2><ul class="job_list">{latest}</ul>'
            )
            return _page("Jobs in the UK", body)
        if path == "/jobs":
            return _list("All jobs", items, number(query, "page"), "/jobs")
        if path.startswith("/company/") and path[9:] in catalog.groups:
            shown = catalog.groups[path[9:]]
            return _list(f"Jobs at {shown[0].company}", shown, number(query, "page"), path)
        if (job := catalog.by_key.get(path)) is not None:
            return _job(job)
        return None

    robots = "User-agent: *\nDisallow: /apply/\nDisallow: /__control\n"
    return Built(render, _truth(items), robots, "job board, dt/dd rows, listing -> detail")


def _truth(items: list[Job]) -> Truth:
    expected = {}
    for job in items:
        fields = {
            "posting_id": f"VAC-{job.jid}",
            "title": job.title,
            "company": job.company,
            "city": job.city,
            "employment_type": TYPES[job.kind],
            "experience_level": job.level,
            "date_posted": job.posted.isoformat(),
            "valid_through": job.closes.isoformat(),
            "description": "\n\n".join(job.description),
            "skills": list(job.skills),
        }
        if job.salary:
            low, high, period = job.salary
            fields |= {
                "salary_min": float(low),
                "salary_max": float(high),
                "salary_currency": "GBP",
                "salary_period": PERIODS[period],
            }
        expected[job.path] = fields
    return Truth("job_posting", "url", expected, ("home", "listing", "detail"))
