"""Page templates: sampled pages grouped as a person groups them, by the shape of their
URL and the skeleton of their DOM.

A page's skeleton is its elements' tag paths from ``<body>`` (``body/div/main/h1``), each
weighed by how often it occurs, without classes: utility classes (``flex gap-2``) and
class-free markup (a table layout) group as well as named ones. What nearly every sampled
page has (the site's chrome: header, navigation, footer) is left out before comparing.
Pages are grouped by URL shape first; a shape whose pages split into clearly different
skeletons is split (``/<slug>`` for products and for categories); shapes whose skeletons
agree are joined (``/quotes`` and ``/tag/<tag>`` print one list). Pure functions over
sampled pages.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from lxml import etree

from crawlers.scaffold.page import Page
from crawlers.scaffold.urls import Pattern, generalise, matches

__all__ = ["Skeleton", "Template", "find_templates", "similarity", "skeleton"]

Skeleton = dict[str, float]  # tag path -> weight

CHROME_SHARE = 0.9  # a path on this share of all pages is the site's chrome
SAME_TEMPLATE = 0.55  # similarity of two groups' skeletons for one template
SPLIT_BELOW = 0.35  # pages of one URL shape this unlike are two templates
MAX_DEPTH = 12
_SKIPPED = {"script", "style", "noscript", "svg", "path", "br", "wbr", "template", "iframe"}


@dataclass
class Template:
    """Pages sharing one structure, and their URL patterns."""

    pages: list[Page]
    patterns: list[Pattern]
    structure: Skeleton = field(default_factory=dict)

    @property
    def regexes(self) -> list[str]:
        return [pattern.regex for pattern in self.patterns]

    def holds(self, url: str) -> bool:
        return any(page.url == url for page in self.pages) or matches(self.regexes, url)


def skeleton(page: Page) -> Skeleton:
    """The tag paths of the page's body elements (depth-limited), each weighed by how
    often it occurs (``1 + log2(n)``: twenty result rows against one)."""
    found: Counter[str] = Counter()
    body = page.response.xpath("//body")
    if not body:
        return {}

    def walk(element: etree._Element, path: str, depth: int) -> None:
        for child in element:
            tag = child.tag
            if not isinstance(tag, str) or tag in _SKIPPED:
                continue
            here = f"{path}/{tag}"
            found[here] += 1
            if depth < MAX_DEPTH:
                walk(child, here, depth + 1)

    walk(body[0].root, "body", 1)
    return {path: 1 + math.log2(n) for path, n in found.items()}


def similarity(a: Skeleton, b: Skeleton) -> float:
    """Weighted Jaccard of two skeletons: 1.0 the same paths as often."""
    keys = a.keys() | b.keys()
    most = sum(max(a.get(k, 0.0), b.get(k, 0.0)) for k in keys)
    return sum(min(a.get(k, 0.0), b.get(k, 0.0)) for k in keys) / most if most else 1.0


def find_templates(pages: Sequence[Page]) -> list[Template]:
    """The templates of the usable ``pages``, largest first (single pages included)."""
    good = [page for page in pages if page.usable]
    if not good:
        return []
    shapes = {page.url: skeleton(page) for page in good}
    share = Counter(path for paths in shapes.values() for path in paths)
    chrome = (
        {p for p, n in share.items() if n >= CHROME_SHARE * len(good)} if len(good) > 4 else set()
    )
    own = {
        url: {k: w for k, w in paths.items() if k not in chrome} for url, paths in shapes.items()
    }
    shaped: dict[tuple[int, str], list[Page]] = {}
    for page in good:
        segments = [s for s in urlsplit(page.url).path.split("/") if s]
        shaped.setdefault((len(segments), segments[0] if segments else ""), []).append(page)
    groups: list[list[Page]] = []
    for members in shaped.values():
        groups += _split(members, own)
    templates: list[Template] = []
    for members in groups:
        core = _core([own[p.url] for p in members])
        same = max(templates, key=lambda t: similarity(t.structure, core), default=None)
        if same is not None and similarity(same.structure, core) >= SAME_TEMPLATE:
            same.pages += members
            same.structure = _core([own[p.url] for p in same.pages])
        else:
            templates.append(Template(list(members), [], core))
    for template in templates:
        template.patterns = generalise([page.url for page in template.pages])
    return sorted(templates, key=lambda t: -len(t.pages))


def _core(paths: Sequence[Skeleton]) -> Skeleton:
    """The paths at least half of the pages have, at their median weight."""
    weights: dict[str, list[float]] = {}
    for page in paths:
        for path, weight in page.items():
            weights.setdefault(path, []).append(weight)
    return {
        path: sorted(found)[len(found) // 2]
        for path, found in weights.items()
        if len(found) >= len(paths) / 2
    }


def _split(members: list[Page], own: dict[str, Skeleton]) -> list[list[Page]]:
    """One URL shape's pages, split where their skeletons are clearly unalike: each page
    joins the first cluster it resembles, else starts one."""
    clusters: list[list[Page]] = []
    for page in members:
        best = max(
            clusters,
            key=lambda c: similarity(own[c[0].url], own[page.url]),
            default=None,
        )
        if best is not None and similarity(own[best[0].url], own[page.url]) >= SPLIT_BELOW:
            best.append(page)
        else:
            clusters.append([page])
    return clusters
