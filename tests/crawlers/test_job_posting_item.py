"""The ``job_posting`` item type: every posting of the jobs board's generator fits it."""

from __future__ import annotations

import dataclasses

import pytest

from core.items_schema import schema_by_type
from crawlers.items import JobPosting
from standins.job_board_site.board import build_board

BASE = "http://127.0.0.1:8100"


def test_every_generated_posting_validates() -> None:
    schema = schema_by_type("job_posting")
    assert schema.cls is JobPosting
    for job in build_board().jobs:
        validation = schema.validate(JobPosting(**job.to_dict(BASE)))
        assert validation.ok, (job.job_id, validation.errors)
        assert schema.stable_id(job.to_dict(BASE)) == job.job_id


def test_its_fields_and_declaration() -> None:
    schema = schema_by_type("job_posting")
    names = [field.name for field in dataclasses.fields(JobPosting)]
    # The generator's item is every field but the platform's own two.
    assert names[:-2] == list(build_board(7, 1).jobs[0].to_dict(BASE))
    assert names[-2:] == ["job_id", "incomplete"]  # job_id: the crawl job (JobTagMiddleware)
    assert schema.id_field == "posting_id"
    assert schema.required == ("url", "title", "company")
    assert schema.history == ("salary_min", "salary_max", "valid_through")
    mapping = schema.es_properties
    assert mapping["company_rating"] == {"type": "long"}
    assert mapping["remote"] == {"type": "boolean"}
    assert mapping["date_posted"]["type"] == "date"
    assert mapping["skills"]["type"] == "keyword"


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        ({"company": None}, "company", "missing"),
        ({"company_rating": 6}, "company_rating", "less_than_equal"),
        ({"country": "Germany"}, "country", "string_pattern_mismatch"),
        ({"salary_min": "55000"}, "salary_min", "float_type"),
        ({"date_posted": "last week"}, "date_posted", "value_error"),
    ],
)
def test_what_it_rejects(change: dict[str, object], field: str, reason: str) -> None:
    job = build_board(7, 1).jobs[0]
    validation = schema_by_type("job_posting").validate(
        JobPosting(**{**job.to_dict(BASE), **change})
    )
    assert [(error.field, error.reason) for error in validation.errors] == [(field, reason)]
