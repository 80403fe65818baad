"""The proposed follow rules and samples of a scaffolded site's page types, in the
profile schema (``FollowRule``, ``sample_paths``). Pure functions over a
``Classification`` of sampled pages; the field map is crawlers.scaffold.fields.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from crawlers.scaffold.classify import (
    HOME,
    Classification,
    Link,
    Page,
    PageType,
    page_number,
    pagination_links,
)
from crawlers.spiders.rules import url_target

# -- follow rules ------------------------------------------------------------------------------


@dataclass(frozen=True)
class FollowProposal:
    to: str
    css: str | None = None
    allow: tuple[str, ...] = ()
    pagination: bool = False

    def rule(self) -> dict[str, Any]:
        rule: dict[str, Any] = {}
        if self.css:
            rule["css"] = self.css
        if self.allow:
            rule["allow"] = list(self.allow)
        rule["to"] = self.to
        return rule


def link_regex(pattern: str) -> str:
    """A url_pattern (searched in path + query) as a LinkExtractor ``allow`` regex
    (searched in the absolute URL): the same without its start anchor."""
    return pattern.removeprefix("^")


def propose_follow(classification: Classification) -> dict[str, list[FollowProposal]]:
    """Per source page type, the links it follows to each other page type: a CSS region
    when the anchors share a class (or a classed parent) that selects no other links,
    else ``allow`` regexes of the target's patterns. Listings also follow their pages."""
    follows: dict[str, list[FollowProposal]] = {}
    for source in classification.types.values():
        if source.role == "detail":
            continue
        rules = []
        if source.role in ("listing", "items"):  # a list of items pages through too
            rules += _pagination_rule(source)
        for target in classification.types.values():
            if target.role in (HOME,) or target.name == source.name:
                continue
            rule = _follow_rule(source, target, classification)
            if rule:
                rules.append(rule)
        if rules:
            follows[source.name] = rules
    return follows


def _target_links(
    page: Page, target: PageType, classification: Classification
) -> tuple[list[Link], list[Link]]:
    """The page's links to ``target`` and its other links."""
    to_target, others = [], []
    for link in page.links:
        (to_target if classification.type_of_url(link.url) == target.name else others).append(link)
    return to_target, others


def _follow_rule(
    source: PageType, target: PageType, classification: Classification
) -> FollowProposal | None:
    per_page = [_target_links(page, target, classification) for page in source.pages]
    if not any(to_target for to_target, _ in per_page):
        return None
    counts: Counter[str] = Counter()
    for to_target, _ in per_page:
        for css in {c for link in to_target for c in (link.selector, _region(link)) if c}:
            counts[css] += 1
    # Most pages first; the anchors' own class before a region around them.
    ranked = sorted(counts, key=lambda css: (-counts[css], css.endswith(" a"), css))
    for css in ranked:
        if css == "a":
            continue
        # A region naming only links to the target, on every page that has such links.
        clean = all(
            not any(css in (link.selector, _region(link)) for link in others)
            for _, others in per_page
        )
        covers = all(
            any(css in (link.selector, _region(link)) for link in to_target)
            for to_target, _ in per_page
            if to_target
        )
        if clean and covers:
            return FollowProposal(target.name, css=css)
    return FollowProposal(target.name, allow=tuple(link_regex(r) for r in target.regexes))


def _region(link: Link) -> str:
    return f"{link.parent} a" if link.parent else ""


def _pagination_rule(listing: PageType) -> list[FollowProposal]:
    """Listing -> listing: ``a[rel="next"]`` when pages carry it, else the selector of
    the next page's link (``li.next a``), else the page-numbered links' shared class,
    else the listing's own patterns."""
    found = [link for page in listing.pages for link in pagination_links(page, listing)]
    if not found:
        return []
    if any("next" in link.rel.split() for link in found):
        return [FollowProposal(listing.name, css='a[rel="next"]', pagination=True)]
    if css := _next_link_css(listing):
        return [FollowProposal(listing.name, css=css, pagination=True)]
    classes = Counter(link.selector for link in found)
    css, n = classes.most_common(1)[0]
    if css != "a" and n == len(found):
        return [FollowProposal(listing.name, css=css, pagination=True)]
    allow = tuple(link_regex(r) for r in listing.regexes)
    return [FollowProposal(listing.name, allow=allow, pagination=True)]


def _next_link_css(listing: PageType) -> str | None:
    """The anchor's class or classed region (``li.next a``) naming, on every sampled page
    of the listing, only its link to the page one number up (none on a last page): one
    fetch per page, where the numbered links' own patterns would also take the pages
    before and the far ones."""
    nexts: dict[str, set[str]] = {}
    for page in listing.pages:
        here, path = page_number(page.url) or 1, urlsplit(page.url).path
        nexts[page.url] = {
            link.url
            for link in pagination_links(page, listing)
            if page_number(link.url) == here + 1 and urlsplit(link.url).path == path
        }
    with_next = [page for page in listing.pages if nexts[page.url]]
    if not with_next:
        return None
    counts = Counter(
        css
        for page in with_next
        for css in {c for link in page.links for c in (link.selector, _region(link))}
        if css != "a" and css
    )
    for css, n in counts.most_common():
        if n < len(with_next):
            break
        named = (
            (page, {link.url for link in page.links if css in (link.selector, _region(link))})
            for page in listing.pages
        )
        if all(urls == nexts[page.url] for page, urls in named):
            return css
    return None


# -- samples -----------------------------------------------------------------------------------


def sample_paths(pages: Sequence[Page], limit: int = 4) -> list[str]:
    """Up to ``limit`` paths spread over the sorted sample (first, last, between): first
    pages of listings before their later pages (often shorter: a poorer baseline)."""
    paths = sorted({page.path for page in pages})
    first = [path for path in paths if page_number(path) is None]
    later = [path for path in paths if page_number(path) is not None]
    chosen = _spread(first, limit)
    return chosen + _spread(later, limit - len(chosen))


def _spread(paths: Sequence[str], limit: int) -> list[str]:
    if len(paths) <= limit:
        return list(paths)
    if limit <= 1:
        return list(paths[:limit])
    step = (len(paths) - 1) / (limit - 1)
    return list(dict.fromkeys(paths[round(i * step)] for i in range(limit)))


def same_host_paths(urls: Iterable[str], host: str) -> list[str]:
    return list(dict.fromkeys(url_target(url) for url in urls if urlsplit(url).netloc == host))
