"""What the sampled pages are, as a person tells it: the detail pages of the items, the
listings leading to them, a list whose entries are the items themselves, hubs and the
start page. Pure functions over sampled pages.

* A LISTING has repeated blocks (``records``) whose links lead to pages of one other
  template that show the block's texts (a card's name and price on the product page):
  those pages are the DETAILS. Of such chains (home -> categories -> products) the
  details are the end: a template whose own blocks lead on to another such template is
  a listing, not a detail.
* Without details, the template whose blocks carry the most varied text is a list of
  ITEMS (quotes, reviews, results without pages of their own).
* The start page is ``home``, unless it is itself a page of the listing or items
  template (a shop whose home is its catalogue's first page). Other templates whose own
  blocks lead to listings or details are hubs.

Blocks found on nearly every page (menus) say nothing of a page's role and are left out.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from crawlers.scaffold.page import Page, page_number
from crawlers.scaffold.records import Records, find_records
from crawlers.scaffold.skeleton import Template, find_templates, similarity, skeleton
from crawlers.scaffold.urls import Pattern, generalise
from crawlers.spiders.rules import url_target

__all__ = ["DETAIL", "HOME", "HUB", "ITEMS", "LISTING", "PageType", "SiteMap", "map_site"]

HOME, LISTING, DETAIL, ITEMS, HUB = "home", "listing", "detail", "items", "hub"
CHROME_SHARE = 0.8  # a block on this share of all pages is the site's chrome
LEADS = 0.6  # share of a block's entries linking to one template
SHOWN = 0.6  # share of entries whose link's words head the page it leads to
PRESENT = 0.5  # share of a template's pages a block must be on
SAME_PAGE = 0.8  # skeleton similarity of the start page to a list's pages to be one of them


@dataclass
class PageType:
    """One proposed page type: its pages, URL patterns and role; for a listing or items
    type, the signature of the blocks that lead to the details or are the items."""

    name: str
    role: str
    pages: list[Page]
    patterns: list[Pattern]
    blocks: str | None = None

    @property
    def regexes(self) -> list[str]:
        return [pattern.regex for pattern in self.patterns]


@dataclass
class SiteMap:
    types: dict[str, PageType]  # in routing order: detail or items, listings, hubs, home
    unclassified: list[Page] = field(default_factory=list)
    templates: list[Template] = field(default_factory=list)
    # Page URL -> what the listings' links to it say (their words, title, image's alt).
    names: dict[str, set[str]] = field(default_factory=dict)

    @property
    def item_type(self) -> PageType | None:
        """The page type carrying the items: the details, or the list of items."""
        return next((t for t in self.types.values() if t.role in (DETAIL, ITEMS)), None)

    def of(self, url: str) -> PageType | None:
        for page_type in self.types.values():
            if any(page.url == url for page in page_type.pages):
                return page_type
        return None


@dataclass
class _Edge:
    source: int  # template index
    blocks: str
    target: int
    leads: float
    shown: float
    texts: float  # mean texts per entry


def map_site(pages: Sequence[Page], start_url: str) -> SiteMap:
    """The page types of a sample (see the module)."""
    templates = find_templates(pages)
    if not templates:
        return SiteMap({})
    index = {page.url: n for n, t in enumerate(templates) for page in t.pages}
    blocks = _blocks(templates)
    edges = _edges(templates, blocks, index)
    start = {url_target(start_url)} | {p.path for p in pages if p.source == "start"}
    home = next((p for p in pages if p.usable and p.path in start), None)
    detail = _detail(edges, templates, home)
    roles: dict[int, tuple[str, str | None]] = {}
    if detail is not None:
        roles[detail] = (DETAIL, None)
        for edge in edges:
            if edge.target == detail and edge.source != detail and edge.leads >= LEADS:
                roles.setdefault(edge.source, (LISTING, edge.blocks))
    else:
        items = _items(templates, blocks, home)
        if items is not None:
            roles[items[0]] = (ITEMS, items[1])
    led_to = set(roles)
    for edge in edges:
        if edge.source not in roles and edge.target in led_to and edge.leads >= LEADS:
            roles[edge.source] = (HUB, edge.blocks)
    found = _named(templates, roles, home)
    for n, (role, sig) in roles.items():
        if role == LISTING:
            for records in blocks[n].get(sig or "", []):
                for said in records.anchors:
                    for url, words in said.items():
                        found.names.setdefault(url, set()).add(words)
    return found


def _blocks(templates: Sequence[Template]) -> dict[int, dict[str, list[Records]]]:
    """Per template: its non-chrome blocks by signature, each on enough of its pages."""
    per_page = {p.url: find_records(p) for t in templates for p in t.pages}
    total = sum(len(t.pages) for t in templates)
    # Chrome: a block on nearly every page saying the same each time (a menu); a list of
    # items on most pages says something else on each.
    said: dict[str, Counter[str]] = defaultdict(Counter)
    for on_page in per_page.values():
        for records in on_page:
            said[records.signature][" | ".join(" ".join(t) for t in records.texts)] += 1
    chrome = {
        sig
        for sig, texts in said.items()
        if total > 3
        and sum(texts.values()) >= CHROME_SHARE * total
        and texts.most_common(1)[0][1] >= CHROME_SHARE * sum(texts.values())
    }
    out: dict[int, dict[str, list[Records]]] = {}
    for n, template in enumerate(templates):
        found: dict[str, list[Records]] = defaultdict(list)
        for page in template.pages:
            for records in per_page[page.url]:
                if records.signature not in chrome:
                    found[records.signature].append(records)
        need = max(1, PRESENT * len(template.pages))
        out[n] = {sig: recs for sig, recs in found.items() if len(recs) >= need}
    return out


def _edges(
    templates: Sequence[Template],
    blocks: dict[int, dict[str, list[Records]]],
    index: dict[str, int],
) -> list[_Edge]:
    by_url = {page.url: page for t in templates for page in t.pages}
    edges = []
    for source, found in blocks.items():
        for sig, records in found.items():
            counts: Counter[int] = Counter()
            shown: dict[int, list[float]] = defaultdict(list)
            entries = texts = 0
            for group in records:
                for words, said in zip(group.texts, group.anchors, strict=True):
                    entries += 1
                    texts += len(words)
                    hit: dict[int, tuple[str, str]] = {}
                    for url, label in said.items():
                        target = index.get(url)
                        if target is None:
                            target = next(
                                (n for n, t in enumerate(templates) if t.holds(url)), None
                            )
                        if target is not None and len(label) > len(hit.get(target, ("", ""))[1]):
                            hit[target] = (url, label)
                    for target, (url, label) in hit.items():
                        counts[target] += 1
                        if url in by_url:
                            shown[target].append(float(_titled(label, words, by_url[url])))
            for target, n in counts.items():
                edges.append(
                    _Edge(
                        source, sig, target, n / max(1, entries),
                        sum(shown[target]) / len(shown[target]) if shown[target] else 0.0,
                        texts / max(1, entries),
                    )
                )  # fmt: skip
    return edges


def _titled(label: str, texts: Sequence[str], page: Page) -> bool:
    """The entry names the page it leads to: the link's words are in the page's title or
    a heading (a card's product name is the product page's ``<h1>``; "(about)" heads no
    author page), or the page's ``<h1>`` is one of the entry's texts (a link reading
    "Red Shoe - $29" to the page of the Red Shoe)."""
    words = re.sub(r"(\.\.\.|…)$", "", label).strip().casefold()
    heads = " ".join(
        " ".join(text.split())
        for text in page.response.xpath(
            "//title//text() | //h1//text() | //h2//text() | //h3//text() | //h4//text() | "
            "//b//text() | //*[@itemprop='name']//text()"
        ).getall()
    ).casefold()
    if len(words) >= 2 and words in heads:
        return True
    h1 = " ".join(" ".join(page.response.xpath("//h1//text()").getall()).split()).casefold()
    return len(h1) >= 4 and any(h1 in text.casefold() for text in [label, *texts])


def _detail(edges: Sequence[_Edge], templates: Sequence[Template], home: Page | None) -> int | None:
    """The template at the end of the chains of blocks leading to pages that show them."""
    leading = [e for e in edges if e.leads >= LEADS and e.shown >= SHOWN and e.source != e.target]
    targets = {e.target for e in leading}
    if not targets:
        return None

    def weight(target: int) -> tuple[bool, bool, int, int]:
        incoming = [e for e in leading if e.target == target]
        # The end of a chain; reached from cards (several texts each: a name and a price),
        # not only from menus of one word; from more templates; the most pages.
        sink = not any(e.source == target and e.target in targets for e in leading)
        cards = max(e.texts for e in incoming) >= 1.5
        return sink, cards, len({e.source for e in incoming}), len(templates[target].pages)

    return max(targets, key=weight)


def _items(
    templates: Sequence[Template], blocks: dict[int, dict[str, list[Records]]], home: Page | None
) -> tuple[int, str] | None:
    """The template and blocks whose entries carry the most varied text of two or more
    parts each: a list of items without pages of their own."""
    best: tuple[float, int, str] | None = None
    for n, found in blocks.items():
        for sig, records in found.items():
            if not all(r.item_score for r in records):
                continue
            score = sum(r.item_score for r in records)
            if best is None or score > best[0]:
                best = (score, n, sig)
    return (best[1], best[2]) if best else None


def _named(
    templates: Sequence[Template], roles: dict[int, tuple[str, str | None]], home: Page | None
) -> SiteMap:
    order = {DETAIL: 0, ITEMS: 0, LISTING: 1, HUB: 2}
    types: dict[str, PageType] = {}
    taken = {HOME}
    ranked = sorted(roles.items(), key=lambda kv: (order[kv[1][0]], -len(templates[kv[0]].pages)))
    listing_named = False
    for n, (role, sig) in ranked:
        members = [p for p in templates[n].pages if home is None or p.url != home.url]
        joins_home = (
            home is not None
            and home in templates[n].pages
            and role != HUB
            and _like_the_rest(home, members)
        )
        if joins_home and home is not None:
            members = [home, *members]
        if not members:
            continue
        if role in (DETAIL, ITEMS):
            name = role
        elif home is not None and members == [home]:
            name = HOME
        elif role == LISTING and not listing_named:
            name, listing_named = LISTING, True
        else:
            name = _segment_name(members[-1].path, taken)
        taken.add(name)
        urls = [p.url for p in members]
        if role in (LISTING, ITEMS):
            later = _later_pages(members)
            urls += later
            members += _pages_of_list(templates, roles, home, members, later)
        types[name] = PageType(name, role, members, generalise(urls), sig)
    placed = {p.url for t in types.values() for p in t.pages}
    if home is not None and home.url not in placed:
        types[HOME] = PageType(HOME, HOME, [home], generalise([home.url]))
        placed.add(home.url)
    unclassified = [p for t in templates for p in t.pages if p.url not in placed]
    return SiteMap(types, unclassified, list(templates))


def _later_pages(members: Sequence[Page]) -> list[str]:
    """The list's links to its own other pages (``?page=2``, ``/page/3/``): its patterns
    must take them, sampled or not."""
    paths = {urlsplit(p.url).path for p in members}
    out = []
    for page in members:
        for link in page.links:
            numbered = page_number(link.url) is not None
            if numbered and (urlsplit(link.url).path in paths or "next" in link.rel.split()):
                out.append(link.url)
        # <link rel="next"> in the head names the next page too.
        for href in page.response.xpath("//link[@rel='next']/@href").getall():
            out.append(page.response.urljoin(href))
    return out


def _pages_of_list(
    templates: Sequence[Template],
    roles: dict[int, tuple[str, str | None]],
    home: Page | None,
    members: Sequence[Page],
    later: Sequence[str],
) -> list[Page]:
    """The list's later pages built otherwise (a last page of two cards and a "previous"
    link, without the first page's blocks): sampled pages of no template with a role,
    numbered, at a path of the list's or linked as its later pages. Left out, they would
    take the list's URL patterns for another kind of page: its pagination not followed."""
    paths = {urlsplit(p.url).path for p in members}
    linked = set(later)
    return [
        page
        for n, template in enumerate(templates)
        if n not in roles
        for page in template.pages
        if page is not home
        and page_number(page.url) is not None
        and (urlsplit(page.url).path in paths or page.url in linked)
    ]


def _like_the_rest(home: Page, members: Sequence[Page]) -> bool:
    """The start page is one of the list's pages (a catalogue's first page), not a page
    built like them in parts (a home with a grid of picks and other sections)."""
    others = [p for p in members if p is not home][:8]
    if not others:
        return True
    own = skeleton(home)
    scores = sorted(similarity(own, skeleton(p)) for p in others)
    return scores[len(scores) // 2] >= SAME_PAGE


def _segment_name(path: str, taken: set[str]) -> str:
    first = next((s for s in urlsplit(path).path.split("/") if s), "hub")
    name = re.sub(r"[^a-z0-9_]+", "_", first.lower().split(".")[0]).strip("_") or "hub"
    if not name[0].isalpha():
        name = "hub_" + name
    while name in taken:
        name += "_pages"
    return name
