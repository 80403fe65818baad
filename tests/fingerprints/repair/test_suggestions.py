"""Repair suggestions through a local OpenAI-compatible server that answers as a model
would: on the demo shop's v2 product pages (where the demo spider's JSON-LD, microdata
and CSS all miss), a right rule is kept with its values and a wrong one is discarded by
validation; no endpoint, no request; the API key appears in no log and no report."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
from scrapy.http import HtmlResponse

from core.config import PlatformSettings
from crawlers.spiders.demo import extract_product
from fingerprints.repair.skeleton import TRUNCATED, skeleton
from fingerprints.repair.suggestions import Rule, chat_client, suggest_repairs
from harness.openai_stub import OpenAIStub
from standins.demo_site.catalog import build_catalog
from standins.demo_site.pages import product_page

BASE = "http://127.0.0.1:8000"
SKUS = ("DM-00001", "DM-00420", "DM-00777")
SECRET = "sk-test-repair-7f3c9a1be2d44c0e"


@pytest.fixture(scope="module")
def catalog() -> Any:
    return build_catalog()


@pytest.fixture(scope="module")
def v2_pages(catalog: Any) -> list[tuple[str, str]]:
    pages = []
    for sku in SKUS:
        html = product_page(catalog, sku, "v2", BASE)
        assert html is not None
        pages.append((f"{BASE}/product/{sku}", html))
    return pages


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub(api_key=SECRET) as server:
        yield server


def settings_for(stub: OpenAIStub, key: str = SECRET) -> PlatformSettings:
    return PlatformSettings(openai_base_url=stub.base_url, openai_api_key=key)


def answering_model(messages: list[dict[str, Any]]) -> str:
    """What a model would answer, read off the prompt: the title from the skeleton's h2
    (right), the currency from the state JSON (right), the price from the visible text
    (wrong: "59,99" is no number)."""
    prompt = str(messages[-1]["content"])
    fields = {entry["field"] for entry in json.loads(prompt.split("\n")[2])}
    suggestions = []
    if "name" in fields and "h2.pdp__title" in prompt:
        suggestions.append({"field": "name", "kind": "css", "selector": "h2.pdp__title::text"})
    if "currency" in fields and "product.pricing.currencyCode" in prompt:
        suggestions.append(
            {
                "field": "currency",
                "kind": "json",
                "selector": "script#__STATE__",
                "path": "product.pricing.currencyCode",
                "why": "the state blob carries the ISO code",
            }
        )
    if "price" in fields and "span.pdp__amount" in prompt:
        suggestions.append({"field": "price", "kind": "css", "selector": "span.pdp__amount::text"})
    return json.dumps({"suggestions": suggestions})


# -- the premise: v2 breaks the demo spider ------------------------------------------------


def test_the_demo_spider_finds_no_product_on_v2_pages(v2_pages: list[tuple[str, str]]) -> None:
    for url, html in v2_pages:
        fields = extract_product(HtmlResponse(url, body=html.encode(), encoding="utf-8"))
        assert (fields["name"], fields["price"], fields["currency"]) == (None, None, None)


# -- validation through the endpoint --------------------------------------------------------


def test_a_right_rule_is_kept_with_its_values_and_a_wrong_one_discarded(
    stub: OpenAIStub, catalog: Any, v2_pages: list[tuple[str, str]]
) -> None:
    stub.chat_answer = answering_model
    report = suggest_repairs(
        "demo",
        {"product": ["name", "price", "currency"]},
        {"product": v2_pages},
        client=chat_client(settings_for(stub)),
        model="stub-chat-1",
        current_rules={"product": {"price": ".product-price .price-value", "title": "h1"}},
    )
    assert report.skipped is None and report.errors == ()
    kept = {repair.field: repair for repair in report.kept}
    assert sorted(kept) == ["currency", "name"]
    names = [catalog.by_sku[sku].name for sku in SKUS]
    assert [value for _, value in kept["name"].values] == names
    assert [url for url, _ in kept["name"].values] == [url for url, _ in v2_pages]
    assert kept["name"].rule == Rule("css", "h2.pdp__title::text")
    assert kept["name"].old_rule is None  # the profile names it "title", not "name"
    assert [value for _, value in kept["currency"].values] == ["EUR"] * len(SKUS)
    assert str(kept["currency"].rule) == "json: script#__STATE__ -> product.pricing.currencyCode"
    (wrong,) = report.discarded
    assert (wrong.field, wrong.rule) == ("price", "css: span.pdp__amount::text")
    assert "invalid value" in wrong.reason and "float_parsing" in wrong.reason
    assert f"on {v2_pages[0][0]}" in wrong.reason

    # One request, with skeletons (not the raw page) and each field's schema.
    (request,) = stub.chat_requests
    assert request["model"] == "stub-chat-1"
    assert request["response_format"] == {"type": "json_object"}
    prompt = request["messages"][-1]["content"]
    assert "h2.pdp__title" in prompt and "product.pricing.amountCents = " in prompt
    assert "document.createElement" not in prompt  # script code is not sent
    assert '"old_rule": ".product-price .price-value"' in prompt

    table = report.markdown()
    assert "| page type | field | old rule | new rule | values on the sample |" in table
    assert f"| product | name | - | css: h2.pdp__title::text | {'; '.join(names)} |" in table
    assert "product.price `css: span.pdp__amount::text`: invalid value" in table


def test_malformed_rules_and_unknown_fields_are_discarded_with_the_reason(
    stub: OpenAIStub, v2_pages: list[tuple[str, str]]
) -> None:
    stub.chat_answer = lambda messages: json.dumps(
        {
            "suggestions": [
                {"field": "brand", "kind": "css", "selector": "div[[["},
                {"field": "brand", "kind": "xpath", "selector": "//h9/text()"},
                {"field": "brand", "kind": "regex", "selector": "by (.*)"},  # not a kind
                {"field": "sku", "kind": "css", "selector": ".pdp::attr(data-id)"},
                {"field": "brand", "kind": "css", "selector": ".pdp__by b"},
            ]
        }
    )
    report = suggest_repairs(
        "demo",
        {"product": ["brand", "colour"], "listing": ["name"]},
        {"product": v2_pages},
        client=chat_client(settings_for(stub)),
        model="stub-chat-1",
    )
    reasons = {(d.field, d.rule): d.reason for d in report.discarded}
    assert reasons[("colour", "-")] == "not a field of item type 'demo_product'"
    assert reasons[("brand", "css: div[[[")].startswith("invalid css selector: ")
    assert reasons[("brand", "xpath: //h9/text()")] == f"no value on {v2_pages[0][0]}"
    assert reasons[("sku", "css: .pdp::attr(data-id)")] == "not a failing field"
    assert reasons[("?", "-")].startswith("malformed suggestion: kind: Input should be 'css'")
    assert report.errors == ("listing: no sample page to ask about or validate on",)
    ((field, rule),) = [(r.field, str(r.rule)) for r in report.kept]
    assert (field, rule) == ("brand", "css: .pdp__by b")  # an element: its whole text


def test_a_failed_request_is_an_error_of_the_report_not_an_exception(
    stub: OpenAIStub, v2_pages: list[tuple[str, str]]
) -> None:
    stub.chat_answer = answering_model
    stub.fail_next(500, times=5)
    report = suggest_repairs(
        "demo",
        {"product": ["name"]},
        {"product": v2_pages},
        client=chat_client(settings_for(stub)),
        model="stub-chat-1",
    )
    assert report.kept == () and report.errors == (
        "product: request failed: InternalServerError (HTTP 500)",
    )
    assert "Errors:" in report.markdown()


# -- no endpoint, no secrets ---------------------------------------------------------------------


def test_without_an_endpoint_nothing_is_asked_and_one_line_says_why(
    v2_pages: list[tuple[str, str]], caplog: pytest.LogCaptureFixture
) -> None:
    assert chat_client(PlatformSettings(openai_base_url=None, openai_api_key=None)) is None
    caplog.set_level(logging.DEBUG)
    report = suggest_repairs(
        "demo", {"product": ["name"]}, {"product": v2_pages}, client=None, model="gpt-4o-mini"
    )
    assert report.kept == () and report.discarded == ()
    assert report.skipped is not None and "OPENAI_BASE_URL" in report.skipped
    (record,) = [r for r in caplog.records if r.name.startswith("fingerprints")]
    assert record.levelno == logging.INFO
    assert record.getMessage() == f"repair suggestions for demo skipped: {report.skipped}"
    assert "Not asked: no OpenAI-compatible endpoint" in report.markdown()


@pytest.mark.parametrize("key", [SECRET, "sk-wrong-key-0a1b2c3d4e5f6a7b"])
def test_the_api_key_is_in_no_log_and_no_report(
    key: str, stub: OpenAIStub, v2_pages: list[tuple[str, str]], caplog: pytest.LogCaptureFixture
) -> None:
    stub.chat_answer = answering_model
    caplog.set_level(logging.DEBUG)  # the SDK's and httpx's debug lines too
    report = suggest_repairs(
        "demo",
        {"product": ["name", "price"]},
        {"product": v2_pages},
        client=chat_client(settings_for(stub, key)),
        model="stub-chat-1",
    )
    if key == SECRET:
        assert [r.field for r in report.kept] == ["name"]
    else:
        assert report.errors == ("product: request failed: AuthenticationError (HTTP 401)",)
    everything = (
        "\n".join(
            [caplog.text, *(r.getMessage() for r in caplog.records), json.dumps(report.to_dict())]
        )
        + report.markdown()
    )
    # Neither the key nor any long piece of it (the server's message echoes a masked form).
    assert key not in everything
    assert not re.search(re.escape(key[3:12]), everything)
    assert "stub-chat-1" in caplog.text  # the lines were captured at all


# -- the skeleton ------------------------------------------------------------------------------


def test_skeleton_keeps_the_hooks_selectors_use_and_drops_the_rest() -> None:
    html = (
        """<html><head><title>T</title><style>.x{color:red}</style>
<script>var secretCode = 1;</script>
<script type="application/ld+json">{"@type": "Product", "name": "Lamp",
 "offers": [{"price": 12.5, "priceCurrency": "EUR"}, {"price": 13}]}</script>
</head><body><!-- a comment -->
<div id="main" class="page wide" data-sku="A1" itemprop="x" style="color:red" onclick="f()">
<h1 class="title">  A   very long title that goes on and on and on and on beyond sixty chars </h1>
<p>by <b>Brand</b> · Art. 42</p>
<svg><path d="M0 0"/></svg>
<ul class="cards">"""
        + "".join(f'<li class="card">Card {n}</li>' for n in range(10))
        + """
</ul></div></body></html>"""
    )
    text = skeleton(html)
    lines = text.splitlines()
    assert '    div#main.page.wide[data-sku="A1" itemprop="x"]' in lines
    assert any(
        line.strip().startswith('h1.title "A very long title') and line.endswith('..."')
        for line in lines
    )
    assert '        "· Art. 42"' in lines  # text between children is kept
    assert '    script[type="application/ld+json"] JSON:' in lines
    assert "      offers = list of 2" in lines
    assert '      offers[0].priceCurrency = "EUR"' in lines
    assert "        ... 7 more li.card" in lines
    assert sum(line.strip().startswith("li.card") for line in lines) == 3
    for dropped in ("secretCode", "color:red", "onclick", "comment", "svg", "path", "Card 9"):
        assert dropped not in text


def test_skeleton_is_capped_and_empty_pages_give_nothing(v2_pages: list[tuple[str, str]]) -> None:
    _, html = v2_pages[0]
    full = skeleton(html)
    assert len(full) < len(html) and TRUNCATED not in full
    capped = skeleton(html, max_chars=600)
    assert len(capped) <= 600 and capped.endswith(TRUNCATED)
    assert full.startswith(capped.removesuffix(TRUNCATED).rstrip("\n"))
    assert skeleton("") == "" and skeleton(b"   ") == ""
