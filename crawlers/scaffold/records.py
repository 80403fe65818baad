"""Repeated blocks of a page, as a reader sees a list: product cards, result rows, quotes,
reviews, menu entries. Elements sharing one path from ``<body>`` (each ancestor's tag and
classes, so the cards of a grid's rows are one group) that occur three times or more and
hold text or a link; of blocks nested in each other, the outermost holding one entry of
the list each (a card, not its title). Pure functions over a parsed page."""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from parsel import Selector

from crawlers.scaffold.page import Page, usable_classes

__all__ = ["RECORDS_MIN", "Records", "find_records", "signature", "text_leaves"]

RECORDS_MIN = 3
_SKIPPED = {"script", "style", "noscript", "head", "meta", "link", "br", "option", "path"}
# Classes that mark one entry's state, not its kind: left out of the path.
_STATE = re.compile(r"^(active|current|selected|first|last|odd|even|featured|new|sale|is-.*)$")


@dataclass
class Records:
    """One repeated block on a page: the path its elements share, and the elements."""

    signature: str
    elements: list[Any]
    page: Page

    @cached_property
    def texts(self) -> list[list[str]]:
        return [text_leaves(element) for element in self.elements]

    @cached_property
    def links(self) -> list[list[str]]:
        """Each entry's link targets (absolute, no fragment), in order, once each."""
        out = []
        for element in self.elements:
            hrefs = element.xpath(".//@href").getall()
            if element.root.tag == "a" and element.attrib.get("href"):
                hrefs.insert(0, element.attrib["href"])
            targets = [self.page.response.urljoin(h.strip()).split("#", 1)[0] for h in hrefs]
            out.append(list(dict.fromkeys(t for t in targets if t and not _skipped_href(t))))
        return out

    @cached_property
    def anchors(self) -> list[dict[str, str]]:
        """Each entry's links: target URL -> what the link says (its longest text, else
        its title or its image's alt text)."""
        out = []
        for element in self.elements:
            said: dict[str, str] = {}
            anchors = element.xpath("self::a[@href] | .//a[@href]")
            for anchor in anchors:
                url = self.page.response.urljoin(anchor.attrib["href"].strip()).split("#", 1)[0]
                words = " ".join(" ".join(anchor.xpath(".//text()").getall()).split())
                # Its fullest name: the text, or a title the text was cut from, or the alt.
                title = " ".join((anchor.attrib.get("title") or "").split())
                words = max((words, title), key=len) or anchor.xpath("string(.//img/@alt)").get()
                if len(words or "") > len(said.get(url, "")):
                    said[url] = " ".join((words or "").split())
            out.append(said)
        return out

    @property
    def multi_text(self) -> float:
        """Share of entries holding two or more texts (a card, not a menu entry)."""
        return sum(len(t) >= 2 for t in self.texts) / max(1, len(self.texts))

    @property
    def varied(self) -> bool:
        """The entries say different things (items, not a row of identical buttons)."""
        joined = [" ".join(t) for t in self.texts]
        return len(set(joined)) >= 0.8 * len(joined)

    @property
    def chars(self) -> int:
        return sum(len(" ".join(t)) for t in self.texts)

    @property
    def item_score(self) -> float:
        """How much this block looks like a list of items (0: not one): entries of two
        or more texts that differ, none a large part of the page (a layout's columns),
        several of them; microdata items weigh double."""
        if self.multi_text < 0.8 or not self.varied:
            return 0.0
        page_chars = len(
            " ".join(" ".join(self.page.response.xpath("//body//text()").getall()).split())
        )
        largest = max((len(" ".join(t)) for t in self.texts), default=0)
        if page_chars and largest > 0.4 * page_chars:
            return 0.0
        marked = sum(
            bool(e.attrib.get("itemscope") is not None and e.attrib.get("itemtype"))
            for e in self.elements
        )
        weight = 2.0 if marked >= 0.8 * len(self.elements) else 1.0
        return self.chars * weight * min(1.0, len(self.elements) / 5)


def _skipped_href(url: str) -> bool:
    return url.startswith(("javascript:", "mailto:", "tel:"))


def text_leaves(element: Any) -> list[str]:
    """The element's texts, in order: each descendant's direct text, stripped."""
    out = []
    for text in element.xpath(
        ".//text()[not(ancestor::script or ancestor::style or ancestor::noscript)]"
    ).getall():
        words = " ".join(text.split())
        if words:
            out.append(words)
    return out


def _token(node: Any) -> str:
    classes = sorted(usable_classes((node.get("class") or "").split()))
    return node.tag + "".join(f".{c}" for c in classes if not _STATE.match(c))


def signature(element: Any) -> str:
    """The element's path from ``<body>``: each ancestor's tag and kind classes."""
    node = element.root
    parts = []
    while node is not None and node.tag != "html":
        parts.append(_token(node))
        node = node.getparent()
    return ">".join(reversed(parts))


def find_records(page: Page) -> list[Records]:
    """The repeated blocks of ``page``, in document order of their first entry."""
    return list(_find_records(page))


@functools.lru_cache(maxsize=128)
def _find_records(page: Page) -> tuple[Records, ...]:
    body = page.response.xpath("//body")
    if not body:
        return ()
    groups: dict[str, list[Any]] = {}

    def walk(node: Any, path: str) -> None:
        for child in node:
            tag = child.tag
            if not isinstance(tag, str) or tag in _SKIPPED:
                continue
            here = f"{path}>{_token(child)}"
            groups.setdefault(here, []).append(child)
            walk(child, here)

    walk(body[0].root, "body")
    repeated = {
        sig: nodes
        for sig, nodes in groups.items()
        if len(nodes) >= RECORDS_MIN and _holds_content(nodes) and _alike(nodes)
    }
    roots = []
    for sig, nodes in repeated.items():
        parent = sig.rsplit(">", 1)[0]
        outer = groups.get(parent)
        if outer is not None and len(outer) == len(nodes):
            # The inner part of an entry whose wrapper repeats as often, or of the page's
            # distinct parts (one link in each of its header, main column and footer).
            continue
        elements = [Selector(root=node, type="html") for node in nodes]
        roots.append(Records(sig, elements, page))
    roots.sort(key=lambda r: page.order.get(r.elements[0].root, 0))
    return tuple(roots)


def _alike(nodes: Sequence[Any]) -> bool:
    """Entries of one list: built alike (their children's tags mostly the same), not
    the page's distinct parts (a header, a main column and a footer, each with an id)."""
    names = [node.get("id") for node in nodes]
    if all(names) and len(set(names)) == len(names) and not any(re.search(r"\d", n) for n in names):
        return False
    shapes = [Counter(c.tag for c in node if isinstance(c.tag, str)) for node in nodes]
    first = shapes[len(shapes) // 2]
    alike = sum(_overlap(shape, first) >= 0.5 for shape in shapes)
    return alike >= 0.7 * len(shapes)


def _overlap(a: Counter[str], b: Counter[str]) -> float:
    keys = a.keys() | b.keys()
    most = sum(max(a[k], b[k]) for k in keys)
    return sum(min(a[k], b[k]) for k in keys) / most if most else 1.0


def _holds_content(nodes: Sequence[Any]) -> bool:
    with_content = sum(
        1
        for node in nodes
        if "".join(node.itertext()).strip() or node.tag == "img" or node.find(".//img") is not None
    )
    return with_content >= 0.8 * len(nodes)
