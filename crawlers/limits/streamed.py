"""CSS queries answered in one streamed pass over a page, without building its tree.

A page's lxml tree costs ~14 times its HTML (~850 bytes per element of a link list), and
parsel adds a ``Selector`` per match on top: a 6 MB page of 100,000 links took ~135 MB to
read its links. Here the page is fed to lxml's HTML parser with a target (SAX events, no
tree): each query keeps at most ``keep`` matches and counts the rest, so what a page
costs is bounded by what is kept, not by what the page holds.

The streamed subset of CSS is what can be decided when an element opens: type, ``.class``,
``#id``, ``[attribute]`` tests (all operators), ``:not()`` of those, and the descendant
and child combinators; a query ends with ``::attr(name)`` (its values) or with no
pseudo-element (an element, kept as a ``Selector`` over its own subtree, so further
queries run on it as on the page's; names XML refuses, like Vue's ``@click``, which no
query can name, are left out of it). Any other query (``::text``, ``:nth-child()``,
sibling combinators, ...) is answered from the page's tree, as before, and so are all
queries on a page that is not HTML.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import cssselect
from cssselect import parser as css
from lxml import etree
from scrapy.http import HtmlResponse, TextResponse
from scrapy.selector import Selector

_CHUNK = 256 * 1024  # characters fed to the parser at a time
_SPACE = re.compile(r"[ \t\r\n]+")  # XPath's normalize-space(), as cssselect's classes use

Attrs = Mapping[str, str]


class _Node(NamedTuple):
    """An open element as its queries test it: classes split once, for every query."""

    tag: str
    attrib: Attrs
    classes: frozenset[str]


# An element's path: it and each of its ancestors, root first.
Path = list[_Node]
Test = Callable[[Path, int], bool]  # does the element at index i of the path match?


class Query(NamedTuple):
    """A CSS query; ``keep``: at most this many matches kept (None: all), the rest
    counted in ``Found.dropped``; ``unique``: repeated values kept and counted once."""

    css: str
    keep: int | None = None
    unique: bool = False


@dataclass
class Found:
    """What one query found: its values in document order (``str`` for ``::attr()``,
    ``Selector`` for elements) and how many more it left unkept."""

    values: list[Any] = field(default_factory=list)
    dropped: int = 0
    _kept: set[Any] = field(default_factory=set, repr=False)  # unique: the values kept
    _over: set[int] = field(default_factory=set, repr=False)  # unique: hashes of the rest

    def add(self, query: Query, value: Any) -> bool:
        """Counts ``value``; True when it is to be kept (the caller then appends it)."""
        if query.unique and (value in self._kept or hash(value) in self._over):
            return False
        if query.keep is None or len(self.values) < query.keep:
            if query.unique:
                self._kept.add(value)
            return True
        if query.unique:
            self._over.add(hash(value))  # past the limit: a count, not a copy of the value
        self.dropped += 1
        return False


class NotStreamed(ValueError):
    """A query outside the streamed subset of CSS (answered from the page's tree)."""


def select(response: TextResponse, queries: Mapping[str, Query]) -> dict[str, Found]:
    """Each query's matches on ``response``, in one pass over its HTML for those in the
    streamed subset (``queries`` named by the caller's keys)."""
    found = {name: Found() for name in queries}
    streamed: dict[str, _Compiled] = {}
    for name, query in queries.items():
        try:
            if not isinstance(response, HtmlResponse):
                raise NotStreamed("not an HTML page")
            streamed[name] = _compile(query.css)
        except NotStreamed:
            _from_tree(response, query, found[name])
    if streamed:
        target = _Target({name: (queries[name], streamed[name], found[name]) for name in streamed})
        parser = etree.HTMLParser(  # type: ignore[call-overload]  # types-lxml: a target needs all ParserTarget methods
            target=target, encoding="utf-8", huge_tree=True
        )
        text = response.text
        for start in range(0, len(text), _CHUNK):
            parser.feed(text[start : start + _CHUNK].replace("\x00", "").encode())
        with contextlib.suppress(etree.LxmlError):  # an empty document: nothing matched
            parser.close()
    return found


def _from_tree(response: TextResponse, query: Query, found: Found) -> None:
    matches = response.css(query.css)
    values: list[Any] = [
        match if isinstance(match.root, etree._Element) else match.get() for match in matches
    ]
    for value in values:
        if found.add(query, value):
            found.values.append(value)


# -- the streamed subset of CSS -------------------------------------------------------------


class _Alternative(NamedTuple):
    tag: str | None  # the matched element's type (None: any), a cheap first test
    test: Test
    attribute: str | None  # the attribute read (None: the element)


@dataclass(frozen=True)
class _Compiled:
    alternatives: tuple[_Alternative, ...]


def _compile(query: str) -> _Compiled:
    try:
        selectors = cssselect.parse(query)
    except cssselect.SelectorError as exc:
        raise NotStreamed(str(exc)) from None
    alternatives = []
    for selector in selectors:
        pseudo = selector.pseudo_element
        attribute = None
        if isinstance(pseudo, css.FunctionalPseudoElement) and pseudo.name == "attr":
            if len(pseudo.arguments) != 1 or pseudo.arguments[0].type not in ("IDENT", "STRING"):
                raise NotStreamed(query)
            attribute = str(pseudo.arguments[0].value)
        elif pseudo is not None:
            raise NotStreamed(query)  # ::text and the like: in the tree
        tree = selector.parsed_tree
        alternatives.append(_Alternative(_tag(tree), _test(tree), attribute))
    return _Compiled(tuple(alternatives))


def _test(tree: Any) -> Test:
    if isinstance(tree, css.CombinedSelector):
        left, right = _test(tree.selector), _test(tree.subselector)
        if tree.combinator == " ":
            return lambda path, i: right(path, i) and any(left(path, j) for j in range(i))
        if tree.combinator == ">":
            return lambda path, i: right(path, i) and i > 0 and left(path, i - 1)
        raise NotStreamed(f"combinator {tree.combinator!r}")  # siblings: gone when streamed
    check = _compound(tree)
    return lambda path, i: check(path[i])


def _tag(tree: Any) -> str | None:
    while not isinstance(tree, css.Element):
        tree = tree.subselector if isinstance(tree, css.CombinedSelector) else tree.selector
    tag = (tree.element or "*").lower()
    return None if tag == "*" else tag


def _compound(tree: Any) -> Callable[[_Node], bool]:
    """A test of one element's own tag and attributes (no combinator)."""
    if isinstance(tree, css.Element):
        if tree.namespace not in (None, "*"):
            raise NotStreamed("namespaces")
        tag = (tree.element or "*").lower()
        return (lambda n: True) if tag == "*" else (lambda n: n.tag == tag)
    if isinstance(tree, css.Class):
        inner, name = _compound(tree.selector), tree.class_name
        return lambda n: name in n.classes and inner(n)
    if isinstance(tree, css.Hash):
        inner, ident = _compound(tree.selector), tree.id
        return lambda n: n.attrib.get("id") == ident and inner(n)
    if isinstance(tree, css.Attrib):
        if tree.namespace not in (None, "*") or tree.flag:
            raise NotStreamed("attribute namespace or flag")
        inner, test, name = _compound(tree.selector), _attribute(tree), tree.attrib.lower()
        return lambda n: test(n.attrib.get(name)) and inner(n)
    if isinstance(tree, css.Negation):
        inner, negated = _compound(tree.selector), _compound(tree.subselector)
        return lambda n: inner(n) and not negated(n)
    raise NotStreamed(type(tree).__name__)  # pseudo-classes and functions: in the tree


def _attribute(tree: Any) -> Callable[[str | None], bool]:
    """cssselect's attribute operators, as it translates them to XPath."""
    op = tree.operator
    if op == "exists":
        return lambda v: v is not None
    value = str(tree.value.value)
    tests: dict[str, Callable[[str | None], bool]] = {
        "=": lambda v: v == value,
        "!=": lambda v: v != value,
        "~=": lambda v: (
            v is not None and bool(value) and not _SPACE.search(value) and value in _split(v)
        ),
        "|=": lambda v: v is not None and (v == value or v.startswith(value + "-")),
        "^=": lambda v: v is not None and bool(value) and v.startswith(value),
        "$=": lambda v: v is not None and bool(value) and v.endswith(value),
        "*=": lambda v: v is not None and bool(value) and value in v,
    }
    if op not in tests:
        raise NotStreamed(f"operator {op!r}")
    return tests[op]


def _split(value: str) -> list[str]:
    """Whitespace-separated words, as XPath's normalize-space() sees them."""
    return _SPACE.split(value.strip(" \t\r\n"))


# -- the pass ---------------------------------------------------------------------------------


class _Subtree:
    """An element match's subtree, built as the page streams (``depth``: its element's
    index in the path; ``slot``: its place among its query's values)."""

    def __init__(self, depth: int, found: Found, slot: int) -> None:
        self.depth, self.found, self.slot = depth, found, slot
        self.builder = etree.TreeBuilder()
        self.tags: list[str] = []

    def start(self, tag: str, attrib: Attrs) -> None:
        try:
            self.builder.start(tag, dict(attrib))
        except ValueError:
            # A name XML refuses, which lxml's HTML tree keeps (Vue's @click, :class): no
            # CSS query can name it, so the subtree goes without it.
            tag = tag if _xml_name(tag, attribute=False) else "invalid-name"
            valid = {name: value for name, value in attrib.items() if _xml_name(name)}
            self.builder.start(tag, valid)
        self.tags.append(tag)

    def end(self) -> None:
        self.builder.end(self.tags.pop())

    def close(self) -> None:
        self.found.values[self.slot] = Selector(root=self.builder.close(), type="html")


def _xml_name(name: str, *, attribute: bool = True) -> bool:
    try:
        etree.Element("x", {name: ""}) if attribute else etree.Element(name)
    except ValueError:
        return False
    return True


class _Target:
    """lxml parser target: the open elements' path, the queries tested as each element
    opens, and the subtrees of the element matches being kept (built as they stream)."""

    def __init__(self, queries: Mapping[str, tuple[Query, _Compiled, Found]]) -> None:
        self.queries = queries
        self.path: Path = []
        self.building: list[_Subtree] = []

    def start(self, tag: str, attrib: Attrs) -> None:
        classes = attrib.get("class")
        self.path.append(_Node(tag, attrib, frozenset(_split(classes)) if classes else frozenset()))
        for subtree in self.building:
            subtree.start(tag, attrib)
        i = len(self.path) - 1
        for query, compiled, found in self.queries.values():
            for alternative_tag, test, attribute in compiled.alternatives:
                if alternative_tag not in (None, tag) or not test(self.path, i):
                    continue
                if attribute is None:
                    if found.add(query._replace(unique=False), None):
                        # Its place now, in document order; its subtree once it ends.
                        subtree = _Subtree(i, found, len(found.values))
                        found.values.append(None)
                        subtree.start(tag, attrib)
                        self.building.append(subtree)
                elif (value := attrib.get(attribute)) is not None and found.add(query, value):
                    found.values.append(value)
                break  # an element matches a query once, however many alternatives

    def end(self, tag: str) -> None:
        for subtree in self.building:
            subtree.end()
        while self.building and self.building[-1].depth == len(self.path) - 1:
            self.building.pop().close()
        self.path.pop()

    def data(self, text: str) -> None:
        for subtree in self.building:
            subtree.builder.data(text)

    def comment(self, text: str) -> None:
        for subtree in self.building:
            subtree.builder.comment(text)

    def close(self) -> None:
        return None
