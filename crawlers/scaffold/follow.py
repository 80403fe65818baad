"""Follow rules and sample paths of the proposed page types (``follow``, ``sample_paths``
in the profile), from the links the sampled pages hold: home -> listings and hubs ->
details, listings -> their other pages and the other listings, details -> related
details and their listings, a list of items -> its other pages.

A rule to a page type whose URL patterns name only its pages (no sampled page of
another type matches them) follows those URLs wherever the page links them (``allow``):
it takes every category and every next page whatever the markup. Otherwise the rule is
the region holding the links to that type only (``css``), or, for a list's next page,
the link that says "next" (``rel``, its words in six languages). Pure functions."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from crawlers.scaffold.candidates import region_css
from crawlers.scaffold.page import PAGE_PARAMS, Link, Page, page_number
from crawlers.scaffold.site_map import DETAIL, HOME, HUB, ITEMS, LISTING, PageType, SiteMap
from crawlers.scaffold.urls import link_regex, matches
from crawlers.spiders.rules import url_target

__all__ = ["NEXT_WORDS", "FollowProposal", "deny_missing", "propose_follow", "sample_paths"]

NEXT_WORDS = re.compile(
    r"^(next|next page|more|older|older posts|older stories|load more|siguiente|"
    r"página siguiente|próxima|seguinte|successiva|successivo|avanti|pagina successiva|"
    r"suivant|page suivante|weiter|nächste|nächste seite|vor|[\u203a\u00bb\u2192>]+|"
    r"\d+\s*[\u203a\u00bb\u2192>]+)(\s*[\u203a\u00bb\u2192>]+)?$",
    re.I,
)
# Which page types each kind of page follows.
TARGETS = {
    HOME: (DETAIL, ITEMS, LISTING, HUB),
    HUB: (DETAIL, ITEMS, LISTING, HUB),
    LISTING: (LISTING, DETAIL),
    ITEMS: (ITEMS,),
    DETAIL: (DETAIL, LISTING),
}


@dataclass(frozen=True)
class FollowProposal:
    to: str
    css: str | None = None
    xpath: str | None = None
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    pagination: bool = False

    def rule(self) -> dict[str, Any]:
        rule: dict[str, Any] = {}
        if self.css:
            rule["css"] = self.css
        if self.xpath:
            rule["xpath"] = self.xpath
        if self.allow:
            rule["allow"] = list(self.allow)
        if self.deny:
            rule["deny"] = list(self.deny)
        rule["to"] = self.to
        return rule


def propose_follow(site_map: SiteMap) -> dict[str, list[FollowProposal]]:
    """Per source page type, its follow rules (see the module)."""
    types = site_map.types
    others = site_map.unclassified
    follows: dict[str, list[FollowProposal]] = {}
    for source in types.values():
        rules: list[FollowProposal] = []
        for target in types.values():
            if target.role not in TARGETS.get(source.role, ()):
                continue
            rule = _rule(source, target, types, others)
            if rule is not None:
                rules.append(rule)
        if rules:
            follows[source.name] = rules
    return follows


def deny_missing(
    follows: dict[str, list[FollowProposal]], missing: Sequence[str]
) -> dict[str, list[FollowProposal]]:
    """Each ``allow`` rule that would take a URL the sample found missing (404/410: a
    broken link of the site, e.g. ``/valuation`` under a one-segment listing pattern)
    denies that exact path, so a crawl does not count the site's broken link as a page
    it failed to get."""
    out: dict[str, list[FollowProposal]] = {}
    for source, rules in follows.items():
        out[source] = []
        for rule in rules:
            denied = [
                rf"^https?://[^/]+{re.escape(urlsplit(url).path)}(?:[?#]|$)"
                for url in missing
                if any(re.search(allow, url) for allow in rule.allow)
            ]
            new = tuple(d for d in dict.fromkeys(denied) if d not in rule.deny)
            out[source].append(replace(rule, deny=rule.deny + new) if new else rule)
    return out


def _target_of(url: str, types: dict[str, PageType]) -> str | None:
    for page_type in types.values():
        if any(page.url == url for page in page_type.pages):
            return page_type.name
    return None


def _rule(
    source: PageType, target: PageType, types: dict[str, PageType], others: Sequence[Page]
) -> FollowProposal | None:
    per_page = []
    for page in source.pages:
        to_target = [link for link in page.links if _leads(link.url, target, types)]
        per_page.append((page, to_target))
    if not any(links for _, links in per_page):
        return None
    if _distinct(target, types, others):
        allow = tuple(link_regex(r) for r in target.regexes)
        deny = _first_page_again(target)
        return FollowProposal(target.name, allow=allow, deny=deny, pagination=source is target)
    region = _region(per_page, target, types)
    if region:
        return FollowProposal(target.name, css=region, pagination=source is target)
    if source is target and (nxt := _next_link(per_page)):
        return FollowProposal(target.name, xpath=nxt, pagination=True)
    allow = tuple(link_regex(r) for r in target.regexes)
    return FollowProposal(target.name, allow=allow, pagination=source is target)


def _first_page_again(target: PageType) -> tuple[str, ...]:
    """A list whose first page is also linked as page 1 (``/c/x`` and ``/c/x?page=1``,
    the "previous" link of page 2): the second URL is denied, so the page is read once."""
    sampled = {urlsplit(p.url).path for p in target.pages if not urlsplit(p.url).query}
    names = set()
    for page in target.pages:
        for link in page.links:
            parts = urlsplit(link.url)
            for name, value in parse_qsl(parts.query):
                if value == "1" and name.lower() in PAGE_PARAMS and parts.path in sampled:
                    names.add(name)
    return tuple(rf"[?&]{re.escape(name)}=1(?:&|$)" for name in sorted(names))


def _leads(url: str, target: PageType, types: dict[str, PageType]) -> bool:
    named = _target_of(url, types)
    if named is not None:
        return named == target.name
    return matches(target.regexes, url) and not any(
        matches(t.regexes, url) for t in types.values() if t is not target
    )


def _distinct(target: PageType, types: dict[str, PageType], others: Sequence[Page]) -> bool:
    """The target's patterns match no sampled page of another type (nor one left out)."""
    pages = [p for t in types.values() if t is not target for p in t.pages] + list(others)
    return bool(target.regexes) and not any(matches(target.regexes, p.url) for p in pages)


def _region(
    per_page: Sequence[tuple[Page, list[Link]]], target: PageType, types: dict[str, PageType]
) -> str | None:
    """A named region holding the page's links to the target and none to another type,
    on every sampled page that has such links."""
    counts: dict[str, int] = {}
    for page, links in per_page:
        root = page.response.selector
        seen = {css for link in links for css in region_css(link.element, root)}
        for css in seen:
            counts[css] = counts.get(css, 0) + 1
    with_links = sum(1 for _, links in per_page if links)
    for css, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        if n < with_links:
            break
        clean = True
        for page, _ in per_page:
            for element in page.response.css(css):
                for href in element.css("a::attr(href)").getall():
                    url = page.response.urljoin(href).split("#", 1)[0]
                    other = _target_of(url, types)
                    if other is not None and other != target.name:
                        clean = False
        if clean:
            return f"{css}"
    return None


def _next_link(per_page: Sequence[tuple[Page, list[Link]]]) -> str | None:
    """An XPath for the link saying "next" (by ``rel``, else by its words)."""
    labels = set()
    for page, links in per_page:
        here = page_number(page.url) or 1
        for link in links:
            if "next" in link.rel.split():
                return "//a[@rel='next']"
            number = page_number(link.url)
            if NEXT_WORDS.match(link.label) and (number is None or number > here):
                labels.add(link.label)
    if len(labels) == 1:
        label = labels.pop()
        if "'" not in label:
            return f"//a[normalize-space()='{label}']"
    return None


# -- samples -----------------------------------------------------------------------------------


def sample_paths(pages: Sequence[Page], limit: int = 4) -> list[str]:
    """Up to ``limit`` paths spread over the sorted sample (first, last, between): first
    pages of lists before their later pages (often shorter: a poorer baseline)."""
    paths = sorted({page.path for page in pages})
    first = [path for path in paths if page_number(path) is None]
    later = [path for path in paths if page_number(path) is not None]
    chosen = _spread(first, limit)
    return chosen + _spread(later, limit - len(chosen))


def covering_paths(chosen: Sequence[str], shown: Mapping[str, Collection[str]]) -> list[str]:
    """``chosen`` and, for every field some page shows that none of them does, the page
    showing most such fields (then the first path): the fixtures show every field read,
    so the coverage baseline holds a rate for each (a rating only some products have)."""
    paths = list(chosen)
    missing = set().union(*shown.values()) - set().union(*(shown.get(p, ()) for p in paths))
    while missing:
        best = min(shown, key=lambda path: (-len(missing & set(shown[path])), path))
        paths.append(best)
        missing -= set(shown[best])
    return paths


def _spread(paths: Sequence[str], limit: int) -> list[str]:
    if len(paths) <= limit:
        return list(paths)
    if limit <= 1:
        return list(paths[:limit])
    step = (len(paths) - 1) / (limit - 1)
    return list(dict.fromkeys(paths[round(i * step)] for i in range(limit)))


def same_host_paths(urls: Sequence[str], host: str) -> list[str]:
    from urllib.parse import urlsplit

    return list(dict.fromkeys(url_target(url) for url in urls if urlsplit(url).netloc == host))
