"""The field map proposed from small HTML pages: structured data paths, value maps, CSS
fallbacks, paragraphs and key/value table rows."""

from __future__ import annotations

import json

from crawlers.scaffold.classify import Page, PageType, classify, generalise
from crawlers.scaffold.fields import path_values, propose_fields
from tests.crawlers.scaffold.support import BASE, shop_pages


def test_product_fields_only_for_paths_the_pages_carry() -> None:
    detail = classify(shop_pages(), BASE + "/").detail
    assert detail is not None
    fields = propose_fields("product", detail)
    assert {name: f.path for name, f in fields.items()} == {
        "name": "name",
        "product_id": "sku",
        "brand": "brand.name",
        "price": "offers.price",
        "currency": "offers.priceCurrency",
        "availability": "offers.availability",
        "rating": "aggregateRating.ratingValue",
    }
    assert fields["rating"].found == 6
    # Visible elements showing the structured value become fallbacks: text first, then
    # a data- attribute (availability prints "In stock", its attribute says InStock).
    assert fields["name"].rules() == [{"data": "name"}, {"css": "h1.product-title"}]
    assert fields["price"].css == "span.amount"
    assert (fields["availability"].css, fields["availability"].attr) == (
        "p.stock[data-availability]",
        "data-availability",
    )
    assert fields["currency"].css is None  # "EUR" is printed nowhere


def job_page(n: int, remote: bool) -> Page:
    node = {
        "@type": "JobPosting",
        "title": f"Cook {n}",
        "identifier": {"@type": "PropertyValue", "name": "Board", "value": f"J-{n}"},
        "hiringOrganization": {"@type": "Organization", "name": "Acme", "sameAs": "http://a.test"},
        "jobLocation": [{"@type": "Place", "address": {"addressLocality": "Lyon"}}],
        "baseSalary": {"currency": "EUR", "value": {"minValue": 30000, "maxValue": 40000}},
        "datePosted": "2026-11-01",
    }
    if remote:
        node["jobLocationType"] = "TELECOMMUTE"
    html = (
        f"<html><head><script type='application/ld+json'>{json.dumps(node)}</script></head></html>"
    )
    return Page(f"{BASE}/jobs/{n}", html=html)


def test_job_posting_fields_and_the_remote_value_map() -> None:
    pages = [job_page(n, remote=n % 2 == 0) for n in range(4)]
    detail = PageType(
        "job_posting", "detail", pages, generalise([p.url for p in pages]), "JobPosting"
    )
    fields = propose_fields("job_posting", detail)
    assert fields["posting_id"].path == "identifier.value"
    assert fields["company"].path == "hiringOrganization.name"
    assert fields["company_url"].path == "hiringOrganization.sameAs"
    assert fields["city"].path == "jobLocation.address.addressLocality"
    assert fields["salary_min"].path == "baseSalary.value.minValue"
    assert fields["salary_currency"].path == "baseSalary.currency"
    assert fields["date_posted"].path == "datePosted"
    # A posting without jobLocationType is not remote: the rule says so with a default.
    assert fields["remote"].rules() == [
        {"data": "jobLocationType", "map": {"TELECOMMUTE": True}, "default": False}
    ]
    assert fields["remote"].found == 2
    assert "salary_period" not in fields and "skills" not in fields


def test_html_descriptions_keep_paragraphs_and_tables_give_the_rest() -> None:
    """A description in HTML (paragraphs) is read from the page's paragraphs first; a
    field the structured data lacks comes from the key/value row labelled like it."""
    pages = []
    for n in range(3):
        paragraphs = [f"First {n}.", f"Second {n}."]
        node = {
            "@type": "JobPosting",
            "title": f"T{n}",
            "description": "".join(f"<p>{p}</p>" for p in paragraphs),
        }
        html = (
            f"<html><head><script type='application/ld+json'>{json.dumps(node)}</script></head>"
            "<body><table class='facts'><tr><th>Experience level</th><td>Senior</td></tr>"
            f"<tr><th>Team:</th><td>Team {n}</td></tr><tr><th>Colour</th><td>red</td></tr>"
            "</table><section class='about'><h2>About</h2>"
            + "".join(f"<p>{p}</p>" for p in paragraphs)
            + "</section></body></html>"
        )
        pages.append(Page(f"{BASE}/job/{n}", html=html))
    detail = PageType(
        "job_posting", "detail", pages, generalise([p.url for p in pages]), "JobPosting"
    )
    fields = propose_fields(
        "job_posting",
        detail,
        ["url", "title", "description", "team", "experience_level", "category"],
    )
    assert fields["description"].rules() == [
        {"css": "section.about p", "all": True},
        {"data": "description"},
    ]
    assert fields["experience_level"].rules() == [
        {"table": "table.facts", "label": "Experience level"}
    ]
    assert fields["team"].rules() == [{"table": "table.facts", "label": "Team"}]
    assert fields["team"].found == 3
    assert set(fields) == {"title", "description", "team", "experience_level"}


def test_path_values_flatten_lists() -> None:
    node = {"a": [{"b": {"c": 1}}, {"b": {"c": [2, 3]}}, {"x": 0}], "e": ""}
    assert path_values(node, "a.b.c") == [1, 2, 3]
    assert path_values(node, "e") == [] and path_values(node, "nope") == []


def test_a_missing_rating_counts_filled_stars() -> None:
    def company_stars(n: int) -> str:
        icons = "<i class='star filled'></i>" * n + "<i class='star'></i>" * (5 - n)
        return f"<div class='company'><span class='rating'>{icons}</span></div>"

    pages = [
        Page(f"{BASE}/job/{n}", html=f"<html><body><h1>T{n}</h1>{company_stars(n)}</body></html>")
        for n in (2, 4)
    ]
    pages.append(Page(BASE + "/job/9", html="<html><body><p>Not rated yet</p></body></html>"))
    detail = PageType(
        "job_posting", "detail", pages, generalise([p.url for p in pages]), "JobPosting"
    )
    fields = propose_fields("job_posting", detail, ["url", "title", "company_rating"])
    assert fields["company_rating"].rules() == [{"css": "span.rating i.star.filled", "count": True}]
    assert fields["company_rating"].found == 2
    assert fields["company_rating"].how == "css span.rating i.star.filled (count)"
