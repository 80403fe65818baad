"""The jobs board's generator: deterministic, and every posting plausible."""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter

import pytest

from standins.job_board_site.board import EPOCH, Board, build_board
from standins.job_board_site.vocabulary import CURRENCY_BY_COUNTRY, EMPLOYMENT_LABELS, LEVELS


@pytest.fixture(scope="module")
def board() -> Board:
    return build_board()


def test_same_arguments_same_board_other_seed_other_board(board: Board) -> None:
    assert build_board(7, 300) == board
    other = build_board(8, 300)
    assert [job.to_dict() for job in other.jobs] != [job.to_dict() for job in board.jobs]
    assert len(build_board(7, 45).jobs) == 45


def test_ids_urls_and_groupings(board: Board) -> None:
    assert [job.job_id for job in board.jobs] == [f"J-{n:05d}" for n in range(1, 301)]
    assert len({job.path for job in board.jobs}) == 300
    for job in board.jobs:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", job.slug)
        assert job.path == f"/job/{job.job_id}-{job.slug}"
    # Every category and every company listed has postings; all postings are grouped.
    assert all(board.by_category[c.slug] for c in board.categories)
    assert all(board.by_company[c.slug] for c in board.companies)
    assert sum(len(jobs) for jobs in board.by_category.values()) == 300
    assert sum(len(jobs) for jobs in board.by_company.values()) == 300
    assert len(board.categories) >= 5


def test_fields_are_plausible(board: Board) -> None:
    for job in board.jobs:
        company = board.company_by_slug[job.company_slug]
        assert (job.company, job.company_rating) == (company.name, company.rating)
        assert job.company_rating is None or 1 <= job.company_rating <= 5
        assert re.fullmatch(r"[A-Z]{2}", job.country)
        assert job.employment_type in EMPLOYMENT_LABELS
        assert job.experience_level in LEVELS
        assert job.category == board.category_by_slug[job.category_slug].name
        posted = dt.date.fromisoformat(job.date_posted)
        assert posted < EPOCH  # fixed dates, never the clock's
        assert posted < dt.date.fromisoformat(job.valid_through)
        assert 3 <= len(job.skills) == len(set(job.skills))
        assert all("," not in skill for skill in job.skills)  # JSON-LD joins them with ", "
        assert len(job.paragraphs) >= 3 and job.description.count("\n\n") >= 2
        assert job.team and job.title and job.city and job.region
        salary = (job.salary_min, job.salary_max, job.salary_currency, job.salary_period)
        if job.salary_min is None:
            assert salary == (None, None, None, None)
        else:
            assert job.salary_max is not None and 0 < job.salary_min <= job.salary_max
            assert job.salary_currency == CURRENCY_BY_COUNTRY.get(job.country, "EUR")
            assert job.salary_period in ("YEAR", "MONTH", "HOUR")


def test_the_mix_has_every_case_a_profile_must_handle(board: Board) -> None:
    unsalaried = sum(job.salary_min is None for job in board.jobs)
    assert 0.15 < unsalaried / 300 < 0.35
    assert 0.1 < sum(job.remote for job in board.jobs) / 300 < 0.4
    assert set(Counter(job.employment_type for job in board.jobs)) == set(EMPLOYMENT_LABELS)
    assert {job.salary_period for job in board.jobs} == {None, "YEAR", "MONTH", "HOUR"}
    assert {job.salary_currency for job in board.jobs} == {None, "EUR", "GBP", "USD"}
    ratings = {job.company_rating for job in board.jobs}
    assert None in ratings and len(ratings) >= 4
    assert set(Counter(job.experience_level for job in board.jobs)) == set(LEVELS)


def test_to_dict_is_the_item_a_crawler_should_store(board: Board) -> None:
    job = board.jobs[0]
    item = job.to_dict("http://127.0.0.1:8100/")
    assert item["url"] == "http://127.0.0.1:8100" + job.path
    assert item["company_url"] == "http://127.0.0.1:8100" + job.company_path
    assert item["posting_id"] == job.job_id
    assert item["skills"] == list(job.skills)
    assert item["description"] == "\n\n".join(job.paragraphs)


def test_a_board_needs_a_job() -> None:
    with pytest.raises(ValueError, match="at least one job"):
        build_board(7, 0)
