"""The jobs board's postings: a deterministic function of (seed, number of jobs).

``build_board(seed, jobs)`` is the source of truth the tests compare crawled items with:
``Job.to_dict(base_url)`` is a posting as a crawler should store it (the
``job_posting`` item type's field names, ``posting_id`` being the board's job id).

Dates are derived from a fixed epoch, never the clock, so every run serves the same bytes.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from standins.job_board_site.vocabulary import (
    CATEGORIES,
    COMPANY_ABOUT,
    COMPANY_FIRST,
    COMPANY_SECOND,
    CURRENCY_BY_COUNTRY,
    CURRENCY_FACTOR,
    EMPLOYMENT_TYPES,
    LEVEL_BASE_SALARY,
    LEVELS,
    LOCATIONS,
    OFFERS,
    CategorySpec,
)

EPOCH = dt.date(2025, 3, 1)  # "today" for the board: every posting is dated before it
NO_SALARY_SHARE = 0.25
REMOTE_SHARE = 0.25
UNRATED_COMPANY_SHARE = 0.2
HOURS_PER_YEAR = 1800


@dataclass(frozen=True, slots=True)
class Category:
    slug: str
    name: str

    @property
    def path(self) -> str:
        return f"/jobs/{self.slug}"


@dataclass(frozen=True, slots=True)
class Company:
    slug: str
    name: str
    rating: int | None  # 1-5 stars; None: not rated yet
    about: str  # one sentence: "<name> builds ..."
    city: str
    region: str
    country: str

    @property
    def path(self) -> str:
        return f"/company/{self.slug}"


@dataclass(frozen=True, slots=True)
class Job:
    job_id: str  # "J-00042"
    slug: str
    title: str
    company: str
    company_slug: str
    company_rating: int | None
    city: str
    region: str
    country: str  # ISO 3166-1 alpha-2
    remote: bool
    employment_type: str  # schema.org: FULL_TIME, PART_TIME, CONTRACTOR, TEMPORARY, INTERN
    salary_min: float | None  # None (with max, currency and period): no salary published
    salary_max: float | None
    salary_currency: str | None  # ISO 4217: EUR, GBP, USD (by country)
    salary_period: str | None  # schema.org unitText: YEAR, MONTH, HOUR
    date_posted: str  # ISO date
    valid_through: str  # ISO date
    paragraphs: tuple[str, ...]  # the description, one entry per paragraph
    skills: tuple[str, ...]
    experience_level: str  # Junior, Mid, Senior, Lead
    team: str
    category: str  # display name
    category_slug: str

    @property
    def path(self) -> str:
        return f"/job/{self.job_id}-{self.slug}"

    @property
    def company_path(self) -> str:
        return f"/company/{self.company_slug}"

    @property
    def description(self) -> str:
        """The description as text: paragraphs separated by a blank line."""
        return "\n\n".join(self.paragraphs)

    def to_dict(self, base_url: str = "") -> dict[str, Any]:
        """The posting as a crawler should store it (``job_posting`` field names)."""
        base = base_url.rstrip("/")
        return {
            "url": base + self.path,
            "posting_id": self.job_id,
            "title": self.title,
            "company": self.company,
            "company_url": base + self.company_path,
            "employment_type": self.employment_type,
            "remote": self.remote,
            "city": self.city,
            "region": self.region,
            "country": self.country,
            "salary_min": self.salary_min,
            "salary_max": self.salary_max,
            "salary_currency": self.salary_currency,
            "salary_period": self.salary_period,
            "date_posted": self.date_posted,
            "valid_through": self.valid_through,
            "description": self.description,
            "skills": list(self.skills),
            "experience_level": self.experience_level,
            "team": self.team,
            "company_rating": self.company_rating,
            "category": self.category,
        }


@dataclass(frozen=True)
class Board:
    seed: int
    categories: tuple[Category, ...]
    companies: tuple[Company, ...]  # ordered by slug
    jobs: tuple[Job, ...]  # ordered by job_id

    @cached_property
    def by_id(self) -> dict[str, Job]:
        return {job.job_id: job for job in self.jobs}

    @cached_property
    def by_category(self) -> dict[str, tuple[Job, ...]]:
        grouped: dict[str, list[Job]] = {category.slug: [] for category in self.categories}
        for job in self.jobs:
            grouped[job.category_slug].append(job)
        return {slug: tuple(jobs) for slug, jobs in grouped.items()}

    @cached_property
    def by_company(self) -> dict[str, tuple[Job, ...]]:
        grouped: dict[str, list[Job]] = {company.slug: [] for company in self.companies}
        for job in self.jobs:
            grouped[job.company_slug].append(job)
        return {slug: tuple(jobs) for slug, jobs in grouped.items()}

    @cached_property
    def category_by_slug(self) -> dict[str, Category]:
        return {category.slug: category for category in self.categories}

    @cached_property
    def company_by_slug(self) -> dict[str, Company]:
        return {company.slug: company for company in self.companies}


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def build_board(seed: int = 7, jobs: int = 300) -> Board:
    """The board for ``seed`` with ``jobs`` postings (same arguments, same board)."""
    if jobs < 1:
        raise ValueError("a board needs at least one job")
    rng = random.Random(f"jobs-board:{seed}:{jobs}")
    companies = _companies(rng, max(6, min(40, jobs // 8)))
    specs = CATEGORIES
    postings = []
    for index in range(jobs):
        # The first postings cover every category and company once, so none is empty.
        spec = specs[index] if index < len(specs) else rng.choice(specs)
        company = companies[index % len(companies)] if index < len(companies) else None
        postings.append(_job(rng, index + 1, spec, company or rng.choice(companies)))
    used = {job.company_slug for job in postings}
    return Board(
        seed=seed,
        categories=tuple(Category(spec.slug, spec.name) for spec in specs),
        companies=tuple(sorted((c for c in companies if c.slug in used), key=lambda c: c.slug)),
        jobs=tuple(postings),
    )


def _companies(rng: random.Random, count: int) -> list[Company]:
    names = [f"{first} {second}" for first in COMPANY_FIRST for second in COMPANY_SECOND]
    companies = []
    for name in rng.sample(names, count):
        city, region, country = rng.choice(LOCATIONS)
        rating = None if rng.random() < UNRATED_COMPANY_SHARE else rng.randint(1, 5)
        about = f"{name} {rng.choice(COMPANY_ABOUT)}."
        companies.append(Company(slugify(name), name, rating, about, city, region, country))
    return companies


def _weighted(rng: random.Random, options: tuple[tuple[str, int], ...]) -> str:
    return rng.choices([name for name, _ in options], [weight for _, weight in options])[0]


def _job(rng: random.Random, number: int, spec: CategorySpec, company: Company) -> Job:
    employment_type = _weighted(rng, EMPLOYMENT_TYPES)
    level = "Junior" if employment_type == "INTERN" else rng.choice(LEVELS)
    role = rng.choice(spec.roles)
    if employment_type == "INTERN":
        title = f"{role} Intern"
    elif level == "Mid":
        title = role
    else:
        title = f"{level} {role}"
    remote = rng.random() < REMOTE_SHARE
    # Most postings are at the company's office, some at another one.
    if rng.random() < 0.7:
        city, region, country = company.city, company.region, company.country
    else:
        city, region, country = rng.choice(LOCATIONS)
    currency = CURRENCY_BY_COUNTRY.get(country, "EUR")
    salary_min = salary_max = None
    salary_currency = salary_period = None
    if rng.random() >= NO_SALARY_SHARE:
        salary_period = {"INTERN": "MONTH", "TEMPORARY": "MONTH", "CONTRACTOR": "HOUR"}.get(
            employment_type, "YEAR"
        )
        salary_min, salary_max = _salary(rng, level, currency, salary_period)
        salary_currency = currency
    posted = EPOCH - dt.timedelta(days=rng.randint(1, 90))
    valid_through = posted + dt.timedelta(days=rng.choice((30, 45, 60, 90)))
    skills = tuple(rng.sample(spec.skills, rng.randint(3, 5)))
    team = rng.choice(spec.teams)
    duties = rng.sample(spec.duties, 3)
    where = "remotely" if remote else f"from our {city} office"
    paragraphs = (
        f"{company.about} We are looking for a {title} to join the {team} team.",
        f"As our new {role}, you will {duties[0]}, {duties[1]} and {duties[2]}. "
        f"You will work {where}.",
        f"You know your way around {', '.join(skills[:-1])} and {skills[-1]}. "
        + (
            "This is a first step into the field: curiosity matters more than experience."
            if level == "Junior"
            else f"We expect the judgement of a {level.lower()}-level colleague."
        ),
        rng.choice(OFFERS),
    )
    slug = slugify(f"{title} {'remote' if remote else city}")
    return Job(
        job_id=f"J-{number:05d}",
        slug=slug,
        title=title,
        company=company.name,
        company_slug=company.slug,
        company_rating=company.rating,
        city=city,
        region=region,
        country=country,
        remote=remote,
        employment_type=employment_type,
        salary_min=salary_min,
        salary_max=salary_max,
        salary_currency=salary_currency,
        salary_period=salary_period,
        date_posted=posted.isoformat(),
        valid_through=valid_through.isoformat(),
        paragraphs=paragraphs,
        skills=skills,
        experience_level=level,
        team=team,
        category=spec.name,
        category_slug=spec.slug,
    )


def _salary(rng: random.Random, level: str, currency: str, period: str) -> tuple[float, float]:
    yearly = LEVEL_BASE_SALARY[level] * CURRENCY_FACTOR[currency] * rng.uniform(0.9, 1.15)
    spread = rng.uniform(1.1, 1.4)
    if period == "YEAR":
        low = round(yearly / 1000) * 1000.0
        return low, round(low * spread / 1000) * 1000.0
    if period == "MONTH":
        low = round(yearly / 12 / 50) * 50.0
        return low, round(low * spread / 50) * 50.0
    low = round(yearly / HOURS_PER_YEAR * 2) / 2  # hourly, to the half unit
    return low, round(low * spread * 2) / 2
