"""URL patterns of a group of pages (``url_patterns`` in the profile): regular expressions
over a URL's path and query, made from the sampled URLs of one page template.

``/p/red-tent-5003`` with ``/p/blue-bike-5011`` -> ``^/p/[^/?#]+$``; ``/job/1042`` with
``/job/1043`` -> ``^/job/\\d+$``; ``/c/bikes?page=2`` with ``/c/tents`` ->
``^/c/[^/?#]+(\\?page=\\d+)?$``; a path with other queries keeps them optional
(``^/item\\.php(\\?[^#]*)?$``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from crawlers.scaffold.page import PAGE_PARAMS
from crawlers.spiders.rules import url_target

__all__ = ["VARIABLE", "Pattern", "generalise", "link_regex", "matches"]

VARIABLE = "[^/?#]+"


@dataclass(frozen=True)
class Pattern:
    """A regular expression for a group of URLs' path and query, and whether it is a
    guess (made from one URL only: its last segment taken for a variable)."""

    regex: str
    guessed: bool = False
    paginated: bool = False


def generalise(urls: Sequence[str]) -> list[Pattern]:
    """Regexes covering ``urls`` (paths and queries), one per path shape (number of
    segments and first segment): segments every URL of a shape shares are kept, the
    others become a variable (digits only: ``\\d+``; a shared file suffix:
    ``[^/?#]+\\.html``); the numbers of a dated path any date."""
    groups: dict[tuple[int, str, bool], list[tuple[list[str], list[tuple[str, str]]]]] = {}
    for url in dict.fromkeys(urls):
        parts = urlsplit(url if "://" in url else "http://x" + url)
        segments = [s for s in parts.path.split("/") if s]
        trailing = parts.path.endswith("/") and bool(segments)
        key = (len(segments), segments[0] if segments else "", trailing)
        groups.setdefault(key, []).append((segments, parse_qsl(parts.query, True)))
    patterns: list[Pattern] = []
    for (count, _, trailing), members in sorted(groups.items()):
        if count == 0:
            regex, guessed = "^/", False
        else:
            columns = list(zip(*(segments for segments, _ in members), strict=True))
            guessed = len(members) == 1
            pieces: list[str] = []
            dated = any(re.fullmatch(r"(19|20)\d\d", column[0]) for column in columns)
            for n, column in enumerate(columns):
                vary = len(set(column)) > 1 or (
                    guessed and n == count - 1 and (count > 1 or _looks_variable(column[0]))
                )
                if dated and all(re.fullmatch(r"\d{1,4}", v) for v in column):
                    pieces.append(r"\d+")  # a dated path (/2024/06/28/...): any date
                else:
                    pieces.append(_variable(column) if vary else re.escape(column[0]))
            regex = "^/" + "/".join(pieces) + ("/" if trailing else "")
        params = {name for _, query in members for name, _ in query}
        page_params = [name for name in PAGE_PARAMS if name in params]
        if page_params and params == set(page_params[:1]):
            regex += rf"(\?{re.escape(page_params[0])}=\d+)?$"
        elif params:
            regex += r"(\?[^#]*)?$"
        else:
            regex += "$"
        if all(p.regex != regex for p in patterns):
            patterns.append(Pattern(regex, guessed, bool(page_params)))
    return patterns


def _variable(values: Iterable[str]) -> str:
    values = list(values)
    if all(v.isdigit() for v in values):
        return r"\d+"
    suffix = re.search(r"\.[a-z0-9]{2,5}$", values[0])
    if suffix and all(v.endswith(suffix.group(0)) for v in values):
        return VARIABLE + re.escape(suffix.group(0))
    return VARIABLE


def _looks_variable(segment: str) -> bool:
    # A lone URL's single segment: an id or a slug rather than a section name.
    return bool(re.search(r"\d", segment)) or "-" in segment or len(segment) > 24


def matches(patterns: Iterable[str], url: str) -> bool:
    target = url_target(url)
    return any(re.search(pattern, target) for pattern in patterns)


def link_regex(pattern: str) -> str:
    """A url_pattern (searched in path + query) as a LinkExtractor ``allow`` regex
    (searched in the absolute URL): anchored after the host instead of at the start."""
    body = pattern.removeprefix("^")
    return r"^https?://[^/]+" + body if pattern.startswith("^") else body
