"""A page reduced to what a model needs to write a selector: its DOM skeleton.

``skeleton(html)`` keeps, per element, the tag, id, classes and the attributes selectors
are written against (``itemprop``, ``itemtype``, ``data-*``, ``rel``, ``href``, ...) with a
short snippet of the element's own text, indented by depth. Scripts holding JSON
(JSON-LD, ``__NEXT_DATA__``-style state blobs) become their key paths with short values,
so a rule can point into them. Styles, SVG, comments and code are dropped, runs of
siblings with the same shape are shown three times and counted, and the whole is capped
at ``max_chars`` (a marker says it was cut). Pure: text in, text out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import lxml.html
from lxml import etree

# Attributes a selector is commonly written against, besides id and class.
KEPT_ATTRIBUTES = (
    "itemprop",
    "itemtype",
    "itemscope",
    "name",
    "property",
    "content",
    "rel",
    "href",
    "src",
    "type",
    "role",
    "aria-label",
    "title",
    "datetime",
    "value",
)
DROPPED_TAGS = frozenset({"style", "noscript", "svg", "template", "iframe", "path", "link"})
JSON_SCRIPT_TYPES = ("application/ld+json", "application/json")
TEXT_SNIPPET = 60
ATTRIBUTE_SNIPPET = 60
SAME_SHAPE_SHOWN = 3
JSON_LINES_PER_SCRIPT = 60
DEFAULT_MAX_CHARS = 12_000
TRUNCATED = "... (skeleton truncated)"
_SPACE = re.compile(r"\s+")


def skeleton(html: str | bytes, *, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The page's skeleton, at most ``max_chars`` characters (see the module docstring)."""
    if not html.strip():
        return ""
    try:
        root = lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError):
        return ""
    lines: list[str] = []
    size = 0
    for line in _element_lines(root, 0):
        if size + len(line) + 1 > max_chars - len(TRUNCATED):
            lines.append(TRUNCATED)
            break
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def _snippet(text: str | None, limit: int) -> str:
    text = _SPACE.sub(" ", text or "").strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _label(element: Any) -> str:
    """``tag#id.class.class[attr=value ...]``: how the element is addressed."""
    label = str(element.tag)
    if element.get("id"):
        label += f"#{element.get('id')}"
    classes = (element.get("class") or "").split()
    label += "".join(f".{name}" for name in classes)
    attributes = [
        (name, value)
        for name, value in element.attrib.items()
        if name in KEPT_ATTRIBUTES or name.startswith("data-")
    ]
    if attributes:
        shown = " ".join(
            f'{name}="{_snippet(value, ATTRIBUTE_SNIPPET)}"' if value else name
            for name, value in attributes
        )
        label += f"[{shown}]"
    return label


def _shape(element: Any) -> tuple[str, str]:
    """What makes siblings "the same": tag and classes (cards of a list)."""
    return str(element.tag), " ".join(sorted((element.get("class") or "").split()))


def _element_lines(element: Any, depth: int) -> Iterator[str]:
    if not isinstance(element.tag, str) or element.tag in DROPPED_TAGS:
        return  # comments, processing instructions, styles, graphics
    indent = "  " * depth
    if element.tag == "script":
        yield from _script_lines(element, indent)
        return
    text = _snippet(element.text, TEXT_SNIPPET)
    yield indent + _label(element) + (f' "{text}"' if text else "")
    shapes: dict[tuple[str, str], int] = {}
    hidden: dict[tuple[str, str], int] = {}
    for child in element:
        if not isinstance(child.tag, str):
            continue
        shape = _shape(child)
        shapes[shape] = shapes.get(shape, 0) + 1
        if shapes[shape] > SAME_SHAPE_SHOWN and shape[1]:
            hidden[shape] = hidden.get(shape, 0) + 1
            continue
        yield from _element_lines(child, depth + 1)
        tail = _snippet(child.tail, TEXT_SNIPPET)
        if tail:  # text between children ("by <b>Brand</b> · Art.-Nr. 42"): keep it
            yield f'{indent}  "{tail}"'
    for (tag, classes), count in hidden.items():
        dotted = "".join(f".{name}" for name in classes.split())
        yield f"{indent}  ... {count} more {tag}{dotted}"


def _script_lines(element: Any, indent: str) -> Iterator[str]:
    """A JSON script as its key paths with short values; any other script dropped."""
    kind = (element.get("type") or "").lower()
    if kind not in JSON_SCRIPT_TYPES:
        return
    try:
        data = json.loads(element.text or "")
    except ValueError:
        return
    yield indent + _label(element) + " JSON:"
    for count, line in enumerate(_json_lines(data, "")):
        if count == JSON_LINES_PER_SCRIPT:
            yield f"{indent}  ... more keys"
            return
        yield f"{indent}  {line}"


def _json_lines(data: Any, path: str) -> Iterator[str]:
    """``path = value`` for every scalar; lists show their first entry (``[0]``) and length."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _json_lines(value, f"{path}.{key}" if path else str(key))
    elif isinstance(data, list):
        if not data:
            yield f"{path} = []"
            return
        if len(data) > 1:
            yield f"{path} = list of {len(data)}"
        yield from _json_lines(data[0], f"{path}[0]")
    else:
        yield f"{path or '$'} = {_snippet(json.dumps(data, ensure_ascii=False), TEXT_SNIPPET)}"
