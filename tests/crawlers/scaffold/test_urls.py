"""URL patterns made from the sampled URLs of one template, and page numbers."""

from __future__ import annotations

import re

from crawlers.scaffold.page import page_number
from crawlers.scaffold.urls import generalise, link_regex, matches


def regexes(*urls: str) -> list[str]:
    return [pattern.regex for pattern in generalise(list(urls))]


def test_segments_that_differ_become_variables() -> None:
    assert regexes("/product/DM-00042", "/product/DM-00007") == [r"^/product/[^/?#]+$"]
    assert regexes("/job/1042", "/job/1043") == [r"^/job/\d+$"]
    assert regexes("/catalogue/a_1/index.html", "/catalogue/b_2/index.html") == [
        r"^/catalogue/[^/?#]+/index\.html$"
    ]
    # A shared file suffix is kept.
    assert regexes("/c/x/index.html", "/c/x/page-2.html") == [r"^/c/x/[^/?#]+\.html$"]


def test_page_numbers_and_other_queries() -> None:
    assert regexes("/c/bikes", "/c/tents?page=2") == [r"^/c/[^/?#]+(\?page=\d+)?$"]
    assert regexes("/item.php?id=3", "/item.php?id=9") == [r"^/item\.php(\?[^#]*)?$"]
    assert regexes("/list.php?cat=1&start=0", "/list.php?cat=2&start=20") == [
        r"^/list\.php(\?[^#]*)?$"
    ]


def test_a_dated_path_takes_any_date() -> None:
    (regex,) = regexes("/2024/06/28/council-backs-plan", "/2024/06/27/bridge-reopens")
    assert regex == r"^/\d+/\d+/\d+/[^/?#]+$"
    assert re.search(regex, "/2019/11/02/an-older-story")


def test_one_url_guesses_its_last_segment_and_says_so() -> None:
    (pattern,) = generalise(["/p/red-tent-5003"])
    assert pattern.regex == r"^/p/[^/?#]+$" and pattern.guessed
    (section,) = generalise(["/about"])
    assert section.regex == r"^/about$" and section.guessed


def test_shapes_stay_apart_and_repeat_once() -> None:
    assert regexes("/", "/quotes?page=2", "/tag/love") == [
        "^/$",
        r"^/quotes(\?page=\d+)?$",
        r"^/tag/[^/?#]+$",
    ]
    assert regexes("/red-shoe-3", "/blue-hat-9") == [r"^/[^/?#]+$"]


def test_matching_and_allow_regexes() -> None:
    assert matches([r"^/job/\d+$"], "http://x.test/job/12")
    assert not matches([r"^/job/\d+$"], "http://x.test/job/12/apply")
    allow = link_regex(r"^/job/\d+$")
    assert re.search(allow, "http://x.test:8080/job/12")
    assert not re.search(allow, "http://x.test/jobs/job/12")


def test_page_numbers() -> None:
    assert page_number("http://x/c?page=3") == 3
    assert page_number("http://x/list.php?cat=2&start=40") == 40
    assert page_number("http://x/page/2/") == 2
    assert page_number("http://x/catalogue/page-4.html") == 4
    assert page_number("http://x/vini/rossi?pagina=2") == 2
    assert page_number("http://x/product/page-turner") is None
