"""What every local site of this package is: its pages (``render``) and the truth about
them (``Truth``: what a person reading the site would store, by the platform's item types
and field names, and the kinds of page it has). The truth comes from the generator that
rendered the pages, never from a scraper: it is what onboarding is measured against
(``python -m bench.onboarding``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

# path, query -> the page's HTML, or None (a 404)
Render = Callable[[str, dict[str, list[str]]], str | None]
ROBOTS = "User-agent: *\nDisallow: /__control\n"


@dataclass(frozen=True)
class Truth:
    """What the site holds. ``items``: match value -> the fields a reader sees, by the
    platform's field names (values as stored: amounts as numbers, ISO dates, absolute
    paths for URLs); ``match``: the field (or ``url``, the item page's path) that pairs a
    crawled item with its truth; ``roles``: the kinds of page a person tells apart
    (``home``, ``listing``, ``detail``, ``items``: a page carrying many items, ``hub``)."""

    item_type: str
    match: str
    items: Mapping[str, Mapping[str, Any]]
    roles: tuple[str, ...]


@dataclass(frozen=True)
class Built:
    render: Render
    truth: Truth
    robots: str = ROBOTS
    description: str = ""


@dataclass(frozen=True)
class Pager:
    """The page numbers of a list: ``page`` of ``pages``, ``per`` items a page."""

    page: int
    pages: int
    per: int

    @classmethod
    def of(cls, total: int, page: int, per: int) -> Pager | None:
        pages = max(1, -(-total // per))
        return cls(page, pages, per) if 1 <= page <= pages else None

    def window(self, items: Sequence[Any]) -> Sequence[Any]:
        return items[(self.page - 1) * self.per : self.page * self.per]


def number(query: Mapping[str, list[str]], name: str) -> int:
    """A page number from the query: 1 when absent, 0 (no such page) when not a number."""
    value = query.get(name, ["1"])[-1]
    return int(value) if value.isdigit() else 0


def esc(text: Any) -> str:
    return escape(str(text))


def document(title: str, body: str, *, lang: str | None = None, head: str = "") -> str:
    lang_attr = f' lang="{lang}"' if lang else ""
    return (
        f'<!DOCTYPE html>\n<html{lang_attr}>\n<head>\n<meta charset="utf-8">\n'
        f"<title>{esc(title)}</title>\n{head}</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


def paragraphs(texts: Sequence[str]) -> str:
    return "".join(f"<p>{esc(text)}</p>" for text in texts)


@dataclass
class Catalog:
    """Items by key and by group (category, section, tag), in a stable order."""

    by_key: dict[str, Any] = field(default_factory=dict)
    groups: dict[str, list[Any]] = field(default_factory=dict)

    def add(self, key: str, item: Any, *groups: str) -> None:
        self.by_key[key] = item
        for group in groups:
            self.groups.setdefault(group, []).append(item)
