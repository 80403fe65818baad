"""The sampling crawl's choices, without a crawl: which candidate comes next, the sitemap
share, and the records read back."""

from __future__ import annotations

from pathlib import Path

from crawlers.scaffold.sample import SampleSpider, _spread, to_sample

BASE = "http://shop.test"


def spider(tmp_path: Path, budget: int) -> SampleSpider:
    return SampleSpider(BASE + "/", budget, str(tmp_path / "out.jsonl"))


def test_the_least_sampled_url_shape_goes_first(tmp_path: Path) -> None:
    s = spider(tmp_path, budget=6)
    s.scheduled = s.in_flight = 0
    s.candidates = [(f"{BASE}/product/P-{n}", 1, "crawl") for n in range(4)]
    s.candidates += [(f"{BASE}/category/c{n}", 2, "crawl") for n in range(4)]
    taken = [request.url for request in s._take()]
    # Four at a time (IN_FLIGHT), alternating between the two shapes.
    assert taken == [
        f"{BASE}/product/P-0",
        f"{BASE}/category/c0",
        f"{BASE}/product/P-1",
        f"{BASE}/category/c1",
    ]
    s.in_flight = 0
    assert len(list(s._take())) == 2  # the budget of 6 pages is spent
    assert s.scheduled == 6 and list(s._take()) == []


def test_sitemap_urls_have_a_share_kept_for_them(tmp_path: Path) -> None:
    s = spider(tmp_path, budget=9)
    s.sitemap_requests = 1  # robots.txt not read yet: a third stays free for sitemap URLs
    s.candidates = [(f"{BASE}/p/{n}", 1, "crawl") for n in range(20)]
    for _ in range(5):
        s.in_flight = 0
        list(s._take())
    assert s.scheduled == 6
    s.candidates += [(f"{BASE}/s/{n}", 1, "sitemap") for n in range(20)]
    s.sitemap_requests = 0
    s.in_flight = 0
    assert [r.meta["source"] for r in s._take()] == ["sitemap"] * 3
    assert s.from_sitemaps == 3 and s.scheduled == 9


def test_without_sitemaps_the_crawl_takes_the_whole_budget(tmp_path: Path) -> None:
    s = spider(tmp_path, budget=6)
    s.candidates = [(f"{BASE}/p/{n}", 1, "crawl") for n in range(20)]
    for _ in range(3):
        s.in_flight = 0
        list(s._take())
    assert s.scheduled == 6


def test_records() -> None:
    sample = to_sample(
        [
            {"url": BASE + "/", "status": 200, "html": "<p>", "source": "start"},
            {"kind": "sitemap", "url": BASE + "/sitemap.xml", "depth": 0},
            {"kind": "sitemap", "url": BASE + "/sitemaps/1.xml", "depth": 1},
            {"url": BASE + "/x", "error": "TimeoutError: took too long"},
            {"url": BASE + "/y", "status": 403, "html": "<p>no", "blocked": "blocked (403)"},
        ]
    )
    assert sample.sitemaps == [BASE + "/sitemap.xml"]
    assert sample.errors == {BASE + "/x": "TimeoutError: took too long"}
    assert [(p.path, p.status, p.blocked) for p in sample.pages] == [
        ("/", 200, None),
        ("/y", 403, "blocked (403)"),
    ]


def test_spread() -> None:
    assert _spread(list("abcdefghij"), 4) == ["a", "d", "g", "j"]
    assert _spread(list("ab"), 4) == ["a", "b"]
