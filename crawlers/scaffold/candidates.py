"""Selectors that may find an element again on the other pages (or cards) of a template:
its id, its ``itemprop``, its classes, its tag under a named ancestor, a telling attribute
(``aria-label``, ``aria-current``, ``data-*``), and its path of tags. Which of them does
is for crawlers.scaffold.synth to measure; this module only proposes. The exact path of
the element (``exact``) reads the one element found, to tell what the field's value is
on that page. Pure functions over parsel selectors."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from crawlers.scaffold.page import usable_classes

__all__ = ["css_candidates", "exact_path", "is_page_root", "region_css"]

_VOLATILE_ID = re.compile(r"\d{3,}|[0-9a-f]{8,}|^:r|ember\d|react", re.I)
_ATTRS = ("itemprop", "aria-label", "aria-current", "role", "rel", "name")
_SKIP_PARENT = {"html", "body"}
_LANDMARKS = {"main", "article"}
_PRESENTATION = ("size", "face", "color", "align", "valign", "width", "bgcolor", "type", "lang")


def is_page_root(root: Any) -> bool:
    return root.root.tag == "html" if hasattr(root, "root") else True


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _named(element: Any) -> list[str]:
    """The element's own selectors: ``#id``, ``tag[itemprop=..]``, ``tag.class..``."""
    tag = element.root.tag
    attrib = element.attrib
    out = []
    ident = attrib.get("id", "")
    if ident and not _VOLATILE_ID.search(ident) and re.fullmatch(r"[A-Za-z][\w-]*", ident):
        out.append(f"#{ident}")
    for name in _ATTRS:
        value = attrib.get(name)
        if value and len(value) < 40 and not re.search(r"\d", value):
            out.append(f"{tag}[{name}={_quote(value)}]")
    for name, value in attrib.items():
        if name.startswith("data-") and len(name) < 30:
            out.append(f"{tag}[{name}]")
        elif name in _PRESENTATION and value and len(value) <= 12:
            out.append(f"{tag}[{name}={_quote(value)}]")  # old markup: <font size="+2">
    classes = usable_classes(attrib.get("class", "").split())
    if classes:
        out.append(tag + "".join(f".{c}" for c in classes))
        out += [f"{tag}.{c}" for c in classes[:3]]
    return out


def css_candidates(element: Any, root: Any) -> list[str]:
    """CSS selectors for ``element``, relative to ``root`` (a page, or a card on it), the
    more specific first: its own names, its tag under each named ancestor (nearest first,
    up to the root), the tag alone."""
    tag = element.root.tag
    out = _named(element)
    top = root.root
    for ancestor in _ancestors(element, top):
        if ancestor.root.tag in _LANDMARKS:  # <main>, <article>: named by their tag
            out.append(f"{ancestor.root.tag} {tag}")
        for name in _named(ancestor)[:3]:
            out.append(f"{name} > {tag}" if ancestor.root is element.root.getparent() else "")
            out.append(f"{name} {tag}")
    out.append(tag)
    return list(dict.fromkeys(c for c in out if c))


def _ancestors(element: Any, top: Any) -> Iterator[Any]:
    for ancestor in reversed(element.xpath("ancestor::*")):
        if ancestor.root is top or ancestor.root.tag in _SKIP_PARENT:
            return
        yield ancestor


def exact_path(element: Any, root: Any) -> str:
    """An XPath reading exactly ``element``: absolute on a page, ``./..`` from a card."""
    node = element.root
    top = root.root
    if is_page_root(root):
        return node.getroottree().getpath(node)
    steps = []
    while node is not None and node is not top:
        parent = node.getparent()
        if parent is None:
            break
        same = [c for c in parent if c.tag == node.tag]
        steps.append(f"{node.tag}[{same.index(node) + 1}]")
        node = parent
    return "./" + "/".join(reversed(steps))


def region_css(element: Any, root: Any) -> list[str]:
    """Selectors for the region holding ``element``'s links (its named ancestors)."""
    return [name for ancestor in _ancestors(element, root.root) for name in _named(ancestor)[:2]]
