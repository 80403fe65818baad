"""RENDER_MODE=auto's comparison (crawlers.fetch.adaptive): pure parts."""

from __future__ import annotations

from scrapy import Request

from crawlers.fetch.adaptive import (
    callback_name,
    is_document_request,
    plain_loses_nothing,
    summarize,
)
from crawlers.recrawl.context import ItemSeen


class Spider:
    def parse_product(self) -> None: ...

    def parse_reviews(self) -> None: ...


def test_page_requests_are_documents_and_api_calls_are_not() -> None:
    assert is_document_request(Request("https://s.example/p/1"))
    assert is_document_request(Request("https://s.example/p/1", headers={"Accept": "*/*"}))
    api = Request("https://s.example/api/p/1/reviews", headers={"Accept": "application/json"})
    assert not is_document_request(api)
    assert not is_document_request(Request("https://s.example/sitemap.xml"))
    assert not is_document_request(Request("https://s.example/g", method="POST", body=b"q"))


def test_callback_names() -> None:
    spider = Spider()
    assert callback_name(Request("https://s.example/")) == "parse"
    assert callback_name(Request("https://s.example/", callback=spider.parse_product)) == (
        "parse_product"
    )


def test_plain_must_give_every_field_and_request_the_browser_gave() -> None:
    spider = Spider()
    reviews = Request("https://s.example/api/1", callback=spider.parse_reviews)
    browser = summarize(
        [{"name": "Lamp", "price": 10.0, "reviews": [{"rating": 5}], "job_id": "j1"}, reviews]
    )
    same_page = summarize(
        [{"name": " Lamp ", "price": 10.0, "reviews": [{"rating": 5}], "job_id": "j2"}, reviews]
    )
    assert plain_loses_nothing(same_page, browser)  # whitespace and the job id aside
    without_reviews = summarize([{"name": "Lamp", "price": 10.0, "reviews": []}, reviews])
    assert not plain_loses_nothing(without_reviews, browser)
    assert not plain_loses_nothing(summarize([{"name": "Lamp", "price": 10.0}]), browser)
    more = summarize(
        [{"name": "Lamp", "price": 10.0, "reviews": [{"rating": 5}], "sku": "1"}, reviews]
    )
    assert plain_loses_nothing(more, browser)  # plain may see more than the browser
    assert not plain_loses_nothing(summarize([]), browser)  # no item at all
    seen = ItemSeen("k", "product", "https://s.example/p/1", "not_modified")
    assert summarize([seen]) == {"items": [], "requests": []}
