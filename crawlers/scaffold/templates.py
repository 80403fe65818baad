"""Page templates of a site without structured data: sampled pages clustered by the
structure they repeat, across URL shapes, and the repeated containers (cards) of each.

A page's structure is the set of its classed elements (``div.quote``, ``span.preis``)
minus the site's chrome (what nearly every sampled page has). Pages of one URL shape
(``/artikel/*``) form a group; groups whose structures agree are one template
(``/quotes`` and ``/tag/*`` print the same list). A template is repeated when two or more
pages share it. Pure functions over sampled pages.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from crawlers.scaffold.classify import Page, Pattern, css_of, generalise, matches

__all__ = ["Cards", "Template", "find_templates", "text_leaves"]

CHROME_SHARE = 0.9  # a classed element on this share of all pages is the site's chrome
SAME_TEMPLATE = 0.6  # Jaccard of two groups' structures for one template
CARDS_MIN = 3  # a container repeated this often on each page of a template
_SKIPPED = {"script", "style", "head", "title", "meta", "link", "noscript", "svg", "br"}


@dataclass
class Template:
    """Pages sharing one structure, their URL patterns and, when they repeat a
    container of several texts, its CSS (``cards``)."""

    pages: list[Page]
    patterns: list[Pattern]
    structure: frozenset[str]
    cards: Cards | None = None

    @property
    def regexes(self) -> list[str]:
        return [pattern.regex for pattern in self.patterns]

    def holds(self, url: str) -> bool:
        return any(page.url == url for page in self.pages) or matches(self.regexes, url)


@dataclass
class Cards:
    """A container repeated on every page of a template: its CSS and its elements."""

    css: str
    per_page: list[list[Any]] = field(default_factory=list)

    @cached_property
    def all(self) -> list[Any]:
        return [card for cards in self.per_page for card in cards]


def structure(page: Page) -> Counter[str]:
    found: Counter[str] = Counter()
    for element in page.response.xpath("//body//*[@class]"):
        tag = element.root.tag
        if isinstance(tag, str) and tag not in _SKIPPED:
            found[css_of(tag, (element.attrib.get("class") or "").split())] += 1
    return found


def find_templates(pages: Sequence[Page], exclude: set[str]) -> list[Template]:
    """The repeated templates among ``pages`` (the paths in ``exclude``, the start page,
    left out), largest first."""
    good = [p for p in pages if p.html and not p.blocked and p.status < 400]
    good = [p for p in good if p.path not in exclude]
    if not good:
        return []
    shapes = {page.url: structure(page) for page in good}
    share = Counter(token for counts in shapes.values() for token in counts)
    chrome = (
        {t for t, n in share.items() if n >= CHROME_SHARE * len(good)} if len(good) > 3 else set()
    )
    groups: list[tuple[Pattern, list[Page]]] = []
    for pattern in generalise([page.url for page in good]):
        members = [p for p in good if matches([pattern.regex], p.url)]
        members = [p for p in members if all(p not in g for _, g in groups)]
        if members:
            groups.append((pattern, members))
    templates: list[Template] = []
    for pattern, members in groups:
        own = Counter(t for p in members for t in shapes[p.url] if t not in chrome)
        core = frozenset(t for t, n in own.items() if n >= len(members) / 2)
        same = next((t for t in templates if _jaccard(t.structure, core) >= SAME_TEMPLATE), None)
        if same is not None:
            same.pages += members
            same.patterns.append(pattern)
        else:
            templates.append(Template(list(members), [pattern], core))
    repeated = [t for t in templates if len(t.pages) >= 2]
    for template in repeated:
        template.cards = _cards(template)
    return sorted(repeated, key=lambda t: -len(t.pages))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def text_leaves(element: Any) -> list[str]:
    """The element's own texts, in order: each descendant's direct text, stripped."""
    return [" ".join(t.split()) for t in element.xpath(".//text()").getall() if t.strip()]


def _cards(template: Template) -> Cards | None:
    """The outermost classed container repeated ``CARDS_MIN`` times or more on every page
    of the template, each holding two or more texts that differ between containers."""
    candidates = []
    for token in template.structure:
        per_page = [page.response.css(token) for page in template.pages]
        # A list's last page may hold fewer: most pages repeat it, every page has one.
        if not all(per_page) or sum(len(f) >= CARDS_MIN for f in per_page) < 0.8 * len(per_page):
            continue
        cards = [card for found in per_page for card in found]
        if sum(len(text_leaves(card)) >= 2 for card in cards) < 0.8 * len(cards):
            continue
        if any(len({" ".join(text_leaves(c)) for c in f}) < 0.8 * len(f) for f in per_page):
            continue  # the same texts each time: navigation, not items
        candidates.append((token, per_page))
    outer = [
        (token, per_page)
        for token, per_page in candidates
        if not any(
            other != token and per_page[0][0].xpath(f"ancestor::*[{_xpath_class(other)}]")
            for other, _ in candidates
        )
    ]
    if not outer:
        return None
    token, per_page = max(outer, key=lambda c: sum(len(text_leaves(x)) for x in c[1][0]))
    return Cards(token, [list(found) for found in per_page])


def _xpath_class(css: str) -> str:
    """``div.quote.big`` as an XPath predicate on an ancestor."""
    tag, *classes = css.split(".")
    tests = [f"self::{tag}"] + [
        f"contains(concat(' ', normalize-space(@class), ' '), ' {c} ')" for c in classes
    ]
    return " and ".join(tests)
