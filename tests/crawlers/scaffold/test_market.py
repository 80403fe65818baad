"""The market a new site's pages print in: declared language, else its words; the
country from the language's region, else the domain."""

from __future__ import annotations

from crawlers.scaffold.market import country_of_host, languages_of, text_language
from crawlers.scaffold.page import Page


def test_text_language() -> None:
    english = (
        "The frame is light and the finish resists scratches. It is built for the trail "
        "and you can fold it in a minute with no tools at all."
    )
    italian = (
        "Un vino di grande struttura, dal colore rubino intenso. Al naso si apre con note "
        "di ciliegia e in bocca è morbido, con il finale lungo della casa."
    )
    assert text_language(english) == "en" and text_language(italian) == "it"
    assert text_language("Buy now") is None


def test_declared_language_first_then_words() -> None:
    declared = Page("http://x.test/", html="<html lang='en-GB'><body><p>x</p></body></html>")
    assert languages_of([declared]) == ("en-GB",)
    words = "<p>" + "the trail is long and the view is worth it for you " * 3 + "</p>"
    bare = Page("http://x.test/", html=f"<html><body>{words}</body></html>")
    assert languages_of([bare]) == ("en",)


def test_country_domains() -> None:
    assert country_of_host("https://www.shop.it/") == "IT"
    assert country_of_host("https://www.shop.co.uk/") == "GB"
    assert country_of_host("https://shop.example.com/") is None
    assert country_of_host("http://127.0.0.1:8000/") is None
