"""What sampled pages are: item (detail) pages, listings, the start page and hubs, and
the URL patterns of each kind. Pure functions over (URL, HTML).

A page is a DETAIL page of an item type when its structured data (JSON-LD, else
microdata) holds exactly one node of a schema.org type that item type stands for
(``Product`` -> ``product``): a listing with product cards in microdata holds several.
A LISTING links to at least ``LISTING_MIN_DETAILS`` detail pages; the start URL is the
``home`` page type whatever it links to; other pages linking to listings or detail pages
are hubs, named after their URL's first path segment (``/company/acme`` -> ``company``).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import parse_qsl, urljoin, urlsplit

from scrapy.http import HtmlResponse

from crawlers.spiders.common import has_type, structured_nodes
from crawlers.spiders.rules import url_target

# schema.org types of an item page's main node -> the platform's item type.
ITEM_TYPES: Mapping[str, tuple[str, ...]] = {
    "product": ("Product", "ProductModel", "IndividualProduct"),
    "job_posting": ("JobPosting",),
    "hotel": ("Hotel", "LodgingBusiness", "Hostel", "Motel", "Resort", "BedAndBreakfast"),
    "property_listing": ("RealEstateListing",),
}
# An Offer of one of these is a property listing (schema.org's way for rentals and sales).
ACCOMMODATION_TYPES = ("Accommodation", "Apartment", "House", "Room", "SingleFamilyResidence")
LISTING_MIN_DETAILS = 3
HOME = "home"
LISTING = "listing"
# Query parameters that number the pages of a listing.
PAGE_PARAMS = ("page", "p", "pg", "pagenum", "start", "offset")
VARIABLE_SEGMENT = "[^/?#]+"


@dataclass(frozen=True)
class Page:
    """A sampled page: its final URL, status and HTML, and how the sample reached it."""

    url: str
    status: int = 200
    html: str = ""
    source: str = "crawl"  # "start", "crawl" (a link) or "sitemap"
    blocked: str | None = None  # why the platform's block detection refused it

    @cached_property
    def response(self) -> HtmlResponse:
        return HtmlResponse(self.url, status=self.status, body=self.html, encoding="utf-8")

    @cached_property
    def nodes(self) -> dict[str, list[dict[str, Any]]]:
        """Structured-data nodes by syntax (``json-ld``, ``microdata``)."""
        if not self.html:
            return {"json-ld": [], "microdata": []}
        return {
            syntax: structured_nodes(self.response, syntax)  # type: ignore[arg-type]
            for syntax in ("json-ld", "microdata")
        }

    @cached_property
    def types(self) -> list[str]:
        """Every schema.org type on the page (for the report), in order."""
        found: list[str] = []
        for nodes in self.nodes.values():
            for node in nodes:
                kinds = node.get("@type")
                for kind in kinds if isinstance(kinds, list) else [kinds]:
                    if isinstance(kind, str):
                        found.append(kind.rsplit("/", 1)[-1])
        return list(dict.fromkeys(found))

    @cached_property
    def links(self) -> list[Link]:
        return page_links(self.url, self.html)

    @property
    def path(self) -> str:
        return url_target(self.url)


@dataclass(frozen=True)
class Link:
    url: str
    rel: str = ""
    classes: tuple[str, ...] = ()
    selector: str = "a"  # the anchor's own CSS (``a.product-link``), for follow rules
    parent: str = ""  # the nearest classed ancestor's CSS (``ul.product-grid``)


def page_links(url: str, html: str) -> list[Link]:
    """The page's same-host ``<a href>`` links (nofollow ones left out), absolute."""
    if not html:
        return []
    response = HtmlResponse(url, body=html, encoding="utf-8")
    host = urlsplit(url).netloc
    links = []
    for anchor in response.css("a[href]"):
        href = (anchor.attrib.get("href") or "").strip()
        rel = (anchor.attrib.get("rel") or "").lower()
        if not href or href.startswith(("#", "javascript:", "mailto:", "tel:")):
            continue
        if "nofollow" in rel.split():
            continue
        target = urljoin(url, href).split("#", 1)[0]
        if urlsplit(target).netloc != host or urlsplit(target).scheme not in ("http", "https"):
            continue
        classes = tuple((anchor.attrib.get("class") or "").split())
        parent = ""
        for ancestor in anchor.xpath("ancestor::*[@class][1]"):
            parent = css_of(ancestor.root.tag, (ancestor.attrib.get("class") or "").split())
        links.append(Link(target, rel, classes, css_of("a", classes), parent))
    return links


def css_of(tag: str, classes: Iterable[str]) -> str:
    """``tag.class1.class2`` for classes CSS can name as they are."""
    usable = [c for c in classes if re.fullmatch(r"-?[A-Za-z_][\w-]*", c)]
    return tag + "".join(f".{c}" for c in usable)


# -- detail pages ------------------------------------------------------------------------------


def item_type_of(page: Page) -> tuple[str, str] | None:
    """(item type, schema.org type) of the page's one main item node, if it has one.
    JSON-LD decides when the page has any item node in it; microdata otherwise."""
    for syntax in ("json-ld", "microdata"):
        found = [hit for node in page.nodes[syntax] if (hit := _node_item_type(node))]
        if len(found) == 1:
            return found[0]
        if found:
            return None  # several items: a listing's cards
    return None


def _node_item_type(node: dict[str, Any]) -> tuple[str, str] | None:
    for item_type, schema_types in ITEM_TYPES.items():
        for schema_type in schema_types:
            if has_type(node, schema_type):
                return item_type, schema_type
    if has_type(node, "Offer"):
        offered = node.get("itemOffered")
        for entry in offered if isinstance(offered, list) else [offered]:
            if isinstance(entry, dict) and has_type(entry, *ACCOMMODATION_TYPES):
                return "property_listing", "Offer"
    return None


# -- URL patterns ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pattern:
    """A regular expression for a group of URLs' path and query, and whether it is a
    guess (made from one URL only: its last segment taken for a variable)."""

    regex: str
    guessed: bool = False
    paginated: bool = False


def generalise(urls: Sequence[str]) -> list[Pattern]:
    """Regexes covering ``urls`` (paths and queries), one per path shape: URLs with the
    same number of segments and first segment are aligned, segments that differ become
    ``[^/?#]+``; a page-number query becomes optional (``(\\?page=\\d+)?``).

    ``/product/DM-00042`` with ``/product/DM-00007`` -> ``^/product/[^/?#]+$``.
    """
    groups: dict[tuple[int, str], list[tuple[list[str], list[tuple[str, str]]]]] = {}
    for url in dict.fromkeys(urls):
        parts = urlsplit(url if "://" in url else "http://x" + url)
        segments = [s for s in parts.path.split("/") if s]
        key = (len(segments), segments[0] if segments else "")
        groups.setdefault(key, []).append((segments, parse_qsl(parts.query, True)))
    patterns = []
    for (count, _), members in sorted(groups.items()):
        if count == 0:
            regex, guessed = "^/", False
        else:
            columns = list(zip(*(segments for segments, _ in members), strict=True))
            varying = [len(set(column)) > 1 for column in columns]
            guessed = len(members) == 1
            if guessed:
                varying[-1] = count > 1 or _looks_variable(columns[-1][0])
            parts = [
                VARIABLE_SEGMENT if vary else re.escape(column[0])
                for vary, column in zip(varying, columns, strict=True)
            ]
            regex = "^/" + "/".join(parts)
        params = {name for _, query in members for name, _ in query}
        page_params = [name for name in PAGE_PARAMS if name in params]
        if page_params:
            regex += rf"(\?{re.escape(page_params[0])}=\d+)?$"
        elif params:
            regex += r"(\?[^#]*)?$"
        else:
            regex += "$"
        patterns.append(Pattern(regex, guessed, bool(page_params)))
    return patterns


def _looks_variable(segment: str) -> bool:
    # A lone URL's single segment: an id or a slug rather than a section name.
    return bool(re.search(r"\d", segment)) or "-" in segment or len(segment) > 24


def matches(patterns: Iterable[str], url: str) -> bool:
    target = url_target(url)
    return any(re.search(pattern, target) for pattern in patterns)


def page_number(url: str) -> int | None:
    for name, value in parse_qsl(urlsplit(url).query):
        if name in PAGE_PARAMS and value.isdigit():
            return int(value)
    return None


# -- the whole sample --------------------------------------------------------------------------


@dataclass
class PageType:
    """One proposed page type: its pages, URL patterns and role."""

    name: str
    role: str  # "detail", "listing", "home", "hub"
    pages: list[Page] = field(default_factory=list)
    patterns: list[Pattern] = field(default_factory=list)
    schema_type: str | None = None  # detail pages: the main node's schema.org type

    @property
    def regexes(self) -> list[str]:
        return [pattern.regex for pattern in self.patterns]


@dataclass
class Classification:
    item_type: str | None
    types: dict[str, PageType]  # in routing order: detail, listing, hubs, home
    unclassified: list[Page]
    seen_item_types: Counter[str]

    @property
    def detail(self) -> PageType | None:
        return next((t for t in self.types.values() if t.role == "detail"), None)

    def type_of_url(self, url: str) -> str | None:
        """The page type of a URL: its sampled page's, else the first matching pattern."""
        for page_type in self.types.values():
            if any(page.url == url for page in page_type.pages):
                return page_type.name
        path = url_target(url)
        for page_type in self.types.values():
            if page_type.role != HOME and any(re.search(r, path) for r in page_type.regexes):
                return page_type.name
        return None


def classify(pages: Sequence[Page], start_url: str, item_type: str | None = None) -> Classification:
    """Page types of a sample: detail pages of the majority item type (or ``item_type``),
    listings, hubs and the start page, each with its URL patterns."""
    good = [page for page in pages if page.html and not page.blocked and page.status < 400]
    typed = {page.url: item_type_of(page) for page in good}
    seen = Counter(hit[0] for hit in typed.values() if hit)
    chosen = item_type or (seen.most_common(1)[0][0] if seen else None)
    types: dict[str, PageType] = {}
    # The start page by its URL, or by how it was reached (a redirected start URL).
    start = {url_target(start_url)} | {page.path for page in good if page.source == "start"}
    details = [
        page
        for page in good
        if (hit := typed[page.url]) and hit[0] == chosen and page.path not in start
    ]
    if chosen and details:
        schema = Counter(typed[page.url][1] for page in details).most_common(1)[0][0]  # type: ignore[index]
        detail = PageType(chosen, "detail", details, generalise([p.url for p in details]), schema)
        types[chosen] = detail
    detail_urls = {page.url for page in details}
    detail_regexes = types[chosen].regexes if chosen in types else []

    def links_to_details(page: Page) -> int:
        return len(
            {
                link.url
                for link in page.links
                if link.url in detail_urls or matches(detail_regexes, link.url)
            }
        )

    rest = [page for page in good if page.url not in detail_urls]
    home = sorted(
        (page for page in rest if page.path in start), key=lambda page: page.source != "start"
    )
    others = [page for page in rest if page.path not in start]
    listings = [page for page in others if links_to_details(page) >= LISTING_MIN_DETAILS]
    listing_regexes: list[str] = []
    if listings:
        patterns = _listing_patterns(listings)
        # A listing's last page may show fewer items: its URL says what it is.
        listing_regexes = [pattern.regex for pattern in patterns]
        listings = [
            page for page in others if page in listings or matches(listing_regexes, page.url)
        ]
        for name, pattern, members in _listing_groups(listings, patterns, set(types)):
            types[name] = PageType(name, LISTING, members, [pattern])
    known = detail_urls | {page.url for page in listings}
    hubs: dict[str, list[Page]] = defaultdict(list)
    unclassified = []
    for page in others:
        if page in listings:
            continue
        leads = any(
            link.url in known or matches(listing_regexes + detail_regexes, link.url)
            for link in page.links
        )
        if leads:
            hubs[_hub_name(page.path, set(types) | {HOME})].append(page)
        else:
            unclassified.append(page)
    for name, members in hubs.items():
        types[name] = PageType(name, "hub", members, generalise([p.url for p in members]))
    if home:
        types[HOME] = PageType(HOME, HOME, home[:1], generalise([home[0].url]))
    return Classification(chosen, types, unclassified, seen)


def _listing_patterns(listings: Sequence[Page]) -> list[Pattern]:
    """Listing patterns, from the sampled listings and their links to other page numbers
    of themselves (``?page=2``), so that a listing's later pages match them too."""
    paths = {urlsplit(page.url).path for page in listings}
    urls = [page.url for page in listings]
    for page in listings:
        for link in page.links:
            numbered = "next" in link.rel.split() or page_number(link.url) is not None
            if numbered and urlsplit(link.url).path in paths:
                urls.append(link.url)
    return generalise(urls)


def _listing_groups(
    listings: Sequence[Page], patterns: Sequence[Pattern], taken: set[str]
) -> list[tuple[str, Pattern, list[Page]]]:
    """Listings of differently shaped URLs (``/jobs/x`` and ``/company/y``) are built
    differently: one page type per pattern, the largest named ``listing``, the others
    after their URLs' first segment (``company``)."""
    groups: list[tuple[Pattern, list[Page]]] = []
    for pattern in patterns:
        members = [page for page in listings if re.search(pattern.regex, page.path)]
        members = [page for page in members if all(page not in g for _, g in groups)]
        if members:
            groups.append((pattern, members))
    # Paginated listings first (categories, searches), then the larger group.
    groups.sort(key=lambda group: (not _paginated(group[1], group[0]), -len(group[1])))
    named = []
    for n, (pattern, members) in enumerate(groups):
        name = LISTING if n == 0 else _hub_name(members[0].path, taken | {LISTING, HOME})
        taken.add(name)
        named.append((name, pattern, members))
    return named


def _paginated(pages: Sequence[Page], pattern: Pattern) -> bool:
    return pattern.paginated or any(
        "next" in link.rel.split() for page in pages for link in page.links
    )


def _hub_name(path: str, taken: set[str]) -> str:
    first_segment = next((s for s in urlsplit(path).path.split("/") if s), "hub")
    name = re.sub(r"[^a-z0-9_]+", "_", first_segment.lower()).strip("_") or "hub"
    if not name[0].isalpha():
        name = "hub_" + name
    return name if name not in taken else f"{name}_hub"


def pagination_links(page: Page, page_type: PageType) -> list[Link]:
    """Links of a listing to further pages of it: ``rel=next``, or a link of the page's
    own pattern carrying a page number."""
    found = []
    for link in page.links:
        if "next" in link.rel.split() or (
            page_number(link.url) is not None and matches(page_type.regexes, link.url)
        ):
            found.append(link)
    return found
