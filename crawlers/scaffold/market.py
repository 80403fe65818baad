"""Where a new site's pages are read (its profile's ``[market]``): the language they print
in (their ``<html lang>``, else the language their words are in) and the country (the
language's region, ``en-GB``, else the host's country domain, ``.it``). A bare ``$`` on
an English page is then a dollar, ``12/03/2025`` on a British one the 12th of March.
Pure functions over sampled pages."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from urllib.parse import urlsplit

from crawlers.scaffold.page import Page

__all__ = ["country_of_host", "languages_of", "text_language"]

# The commonest short words of each language the platform reads: a page's words tell.
_STOPWORDS = {
    "en": "the and of to in is for on with that this you are by from it at as be or your",
    "es": "el la de que y en los del las por con para una un es al lo como más su se",
    "pt": "o a de que e do da em um para com não uma os no se na por mais as dos",
    "it": "il di che e la per un in del non sono una della con le si da gli al alla",
    "fr": "le la de et les des en du un une est pour que dans qui sur au par pas avec",
    "de": "der die und in den von zu das mit sich des auf für ist im dem nicht ein eine",
}
_WORDS = {lang: set(words.split()) for lang, words in _STOPWORDS.items()}
# Country domains that are not the country's code.
_DOMAINS = {"uk": "GB"}
_GENERIC = {"com", "org", "net", "info", "io", "co", "app", "dev", "shop", "store", "eu"}


def text_language(text: str) -> str | None:
    """The language whose common words the text uses most (None: too few to tell)."""
    words = re.findall(r"[^\W\d_]+", text.lower())
    if len(words) < 20:
        return None
    counts = {lang: sum(word in stop for word in words) for lang, stop in _WORDS.items()}
    lang, best = max(counts.items(), key=lambda kv: kv[1])
    return lang if best >= 0.05 * len(words) else None


def languages_of(pages: Sequence[Page]) -> tuple[str, ...]:
    """The pages' language: their declared one (most pages'), else their words'."""
    declared = Counter(page.lang for page in pages if page.usable and page.lang)
    if declared:
        return (declared.most_common(1)[0][0],)
    words = " ".join(
        " ".join(page.response.xpath("//body//p//text() | //body//li//text()").getall())
        for page in pages[:20]
        if page.usable
    )
    found = text_language(words)
    return (found,) if found else ()


def country_of_host(url: str) -> str | None:
    """The country of a host's country domain (``shop.example.it`` -> IT)."""
    host = urlsplit(url).hostname or ""
    if not host or re.fullmatch(r"[\d.]+|\[?[0-9a-f:]+\]?|localhost", host):
        return None
    tld = host.rsplit(".", 1)[-1].lower()
    if tld in _GENERIC or not re.fullmatch(r"[a-z]{2}", tld):
        return None
    return _DOMAINS.get(tld, tld.upper())
