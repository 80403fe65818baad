"""The structural fingerprint of a page (its baseline and similarity:
fingerprints.structure.comparison).

A fingerprint is robust to content and sensitive to structure; four features: the
``skeleton`` (shingles of the body's tag paths and class/id tokens, content-driven tokens
dropped, repeated siblings collapsed), the ``selectors`` the spider relies on (none / one
/ many matches), the ``schema`` (schema.org types in JSON-LD and microdata) and the
``state`` (key paths of embedded state blobs).

Reads: the page's HTML and the profile's selectors. Features, similarity and thresholds:
docs/fingerprints.md "The fingerprint of a page".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from lxml import etree
from parsel import Selector
from w3lib.encoding import html_to_unicode

# Bump when any feature's extraction changes: baselines of another version are refused.
FINGERPRINT_VERSION = 1
SHINGLE_DEPTH = 4
FEATURES = ("skeleton", "selectors", "schema", "state")
WEIGHTS: dict[str, float] = {"skeleton": 0.45, "selectors": 0.25, "schema": 0.15, "state": 0.15}
DEFAULT_THRESHOLD = 0.85
# A baseline token seen on at least this fraction of fixtures is reported when missing.
REPORT_MIN_FREQUENCY = 0.5
STATE_DEPTH = 4  # key-path depth kept from embedded JSON state
MAP_MAX_KEYS = 40  # a JSON object with more keys is a map of data, not a record

Bucket = Literal["none", "one", "many"]

_SKIPPED = frozenset(
    {"script", "style", "noscript", "template", "link", "meta", "br", "wbr", "base", "title"}
)
_LEAVES = frozenset({"svg", "math", "iframe", "object", "video", "audio", "canvas", "picture"})
# Formatting inside text (user-written descriptions, reviews) is content, not layout,
# unless it carries a class or id.
_INLINE = frozenset({"b", "i", "em", "strong", "u", "s", "small", "sup", "sub", "mark", "font"})
_CSS_IN_JS = re.compile(r"^(?:css|sc|jsx|emotion|svelte|astro|tw)-", re.IGNORECASE)
_MODULE_HASH = re.compile(r"^(.+)__([A-Za-z0-9_-]{5,8})$")  # CSS modules: name__hash
_MIXED_RUN = re.compile(r"[a-z][A-Z]{2,}[a-z]")  # "resultsPSbdRIQD": random-looking
_DIGIT = re.compile(r"\d")
_SCHEMA_PREFIX = re.compile(r"^https?://(?:www\.)?schema\.org/", re.IGNORECASE)
_MAP_NAME = re.compile(
    r"feature|flag|experiment|abtest|translation|i18n|messages|copytags", re.IGNORECASE
)
_WINDOW_STATE = re.compile(
    r"\bwindow\.(__[A-Za-z0-9_]+__|[A-Za-z_$][\w$]*[Ss]tate[\w$]*)\s*=(?!=)"
    r"|\b(?:var|let|const)\s+(__[A-Z0-9_]+__)\s*="
)


# -- tokens --------------------------------------------------------------------------------


def _hashlike(token: str) -> bool:
    return bool(_DIGIT.search(token) or _MIXED_RUN.search(token))


def normalize_token(token: str) -> str | None:
    """A class or id token without content-driven parts; None to drop it entirely."""
    token = token.strip()
    if not token or _CSS_IN_JS.match(token):
        return None
    match = _MODULE_HASH.match(token)
    # CSS modules name classes module_local__hash; BEM's block__element has no "_" first.
    if match and ("_" in match.group(1) or not match.group(2).isalpha()):
        token = match.group(1)  # "styles_card__x9Ab2" -> "styles_card"
    if _hashlike(token):
        return None
    return token


def element_tokens(element: etree._Element) -> set[str]:
    """``#id`` and ``.class`` tokens of an element, content-driven ones dropped."""
    tokens = set()
    element_id = element.get("id")
    if element_id and (clean := normalize_token(element_id)):
        tokens.add("#" + clean)
    for name in (element.get("class") or "").split():
        if clean := normalize_token(name):
            tokens.add("." + clean)
    return tokens


_KEY = re.compile(r"[A-Za-z_@$][\w$@:-]{0,60}")


def _key_token(key: str) -> str:
    """A JSON key, or ``*`` when it is data (an id, a URL, a sentence) rather than a name."""
    return key if _KEY.fullmatch(key) and not _hashlike(key) else "*"


# -- parsing ---------------------------------------------------------------------------------


def parse_html(body: bytes | str, content_type: str | None = None) -> Selector:
    """A parsel Selector for ``body``; bytes are decoded as a browser would (w3lib)."""
    if isinstance(body, bytes):
        _, text = html_to_unicode(content_type, body)
    else:
        text = body
    if not text.strip():
        text = "<html></html>"  # lxml refuses an empty document; an empty page is empty
    return Selector(text=text, type="html")


# -- the fingerprint -------------------------------------------------------------------------


@dataclass(frozen=True)
class Fingerprint:
    skeleton: frozenset[str]
    schema: frozenset[str]
    state: frozenset[str]
    selector_counts: Mapping[str, int] = field(default_factory=dict)

    def tokens(self, feature: str) -> frozenset[str]:
        if feature == "selectors":
            return frozenset()
        value: frozenset[str] = getattr(self, feature)
        return value


def fingerprint(
    page: bytes | str | Selector,
    selectors: Mapping[str, str] | None = None,
    *,
    content_type: str | None = None,
) -> Fingerprint:
    selector = page if isinstance(page, Selector) else parse_html(page, content_type)
    root = selector.root
    return Fingerprint(
        skeleton=frozenset(skeleton_shingles(root)),
        schema=frozenset(schema_tokens(root)),
        state=frozenset(state_tokens(root)),
        selector_counts={
            name: count_selector(selector, q) for name, q in (selectors or {}).items()
        },
    )


def skeleton_shingles(root: etree._Element, depth: int = SHINGLE_DEPTH) -> Iterator[str]:
    """Tag-path shingles plus ``parent>tag.class`` tokens of the body's elements.

    Paths use tags only and each class token stands alone, so a modifier class that
    varies with content (``is-active``, ``rating-red``) changes one token, not the
    paths of a whole subtree.
    """
    bodies = root.xpath("//body")
    start = bodies[0] if bodies else root
    # Iterative walk: real pages nest deeper than Python's recursion limit allows for.
    stack: list[tuple[etree._Element, tuple[str, ...]]] = [(start, ())]
    while stack:
        element, ancestors = stack.pop()
        if not isinstance(element.tag, str):
            continue  # comments, processing instructions
        tag = element.tag.lower()
        if tag in _SKIPPED:
            continue
        if tag in _INLINE and not element.get("class") and not element.get("id"):
            stack.extend((child, ancestors) for child in element)  # transparent
            continue
        path = (*ancestors, tag)[-depth:]
        yield " > ".join(path)
        parent = ancestors[-1] if ancestors else ""
        for token in element_tokens(element):
            yield f"{parent} > {tag}{token}"
        if tag not in _LEAVES:
            stack.extend((child, path) for child in element)


def count_selector(selector: Selector, query: str) -> int:
    query = query.strip()
    if query.startswith(("/", "(", "./")):
        return len(selector.xpath(query))
    return len(selector.css(query))


def _schema_type(value: Any) -> list[str]:
    values = value if isinstance(value, list) else [value]
    return [_SCHEMA_PREFIX.sub("", v).strip() for v in values if isinstance(v, str) and v.strip()]


def _jsonld_tokens(node: Any, parent: str | None, prop: str | None) -> Iterator[str]:
    if isinstance(node, list):
        for entry in node:
            yield from _jsonld_tokens(entry, parent, prop)
        return
    if not isinstance(node, dict):
        return
    types = _schema_type(node.get("@type"))
    for name in types:
        yield f"jsonld:{name}"
        if parent and prop:
            yield f"jsonld:{parent}.{prop}:{name}"
    here = types[0] if types else parent
    for key, value in node.items():
        if key in ("@type", "@context"):
            continue
        if isinstance(value, dict | list):
            yield from _jsonld_tokens(value, here, key if not key.startswith("@") else prop)


def _load_json(raw: str) -> Any:
    # Sites put raw control characters and HTML comments into their JSON-LD.
    raw = raw.strip().removeprefix("<!--").removesuffix("-->").strip()
    return json.loads(raw, strict=False)


def schema_tokens(root: etree._Element) -> Iterator[str]:
    for script in root.xpath('//script[contains(@type, "ld+json")]'):
        try:
            data = _load_json(script.text or "")
        except ValueError:
            yield "jsonld:<unparseable>"
            continue
        yield from _jsonld_tokens(data, None, None)
    for element in root.xpath("//*[@itemscope]"):
        for name in _schema_type((element.get("itemtype") or "").split()) or ["<untyped>"]:
            yield f"microdata:{name}"
    for element in root.xpath("//*[@itemprop]"):
        scope = element.xpath("ancestor::*[@itemscope][1]")
        if not scope:
            continue
        owner = (_schema_type((scope[0].get("itemtype") or "").split()) or ["<untyped>"])[0]
        for prop in (element.get("itemprop") or "").split():
            yield f"microdata:{owner}.{prop}"


def _key_paths(data: Any, prefix: str, depth: int) -> Iterator[str]:
    if depth <= 0:
        return
    if isinstance(data, dict):
        if len(data) > MAP_MAX_KEYS or _MAP_NAME.search(prefix.rsplit(".", 1)[-1]):
            # A map (feature flags, translations, an entity cache): its keys are data and
            # churn with every deployment; only its existence is structure.
            yield f"{prefix}.*"
            return
        for key, value in data.items():
            path = f"{prefix}.{_key_token(str(key))}"
            yield path
            yield from _key_paths(value, path, depth - 1)
    elif isinstance(data, list):
        # Lists hold content (reviews, results): their first few entries stand for all.
        for entry in data[:3]:
            yield from _key_paths(entry, prefix + "[]", depth)


def state_tokens(root: etree._Element) -> Iterator[str]:
    for script in root.xpath("//script"):
        kind = (script.get("type") or "").lower()
        text = script.text or ""
        if "json" in kind and "ld+json" not in kind:
            raw_id = script.get("id") or ""
            label = normalize_token(raw_id) if raw_id else "json"
            label = label or "json#*"
            yield f"state:{label}"
            try:
                data = _load_json(text)
            except ValueError:
                yield f"state:{label}<unparseable>"
                continue
            depth = STATE_DEPTH if label.startswith("__") else 2
            yield from (f"state:{label}{p}" for p in _key_paths(data, "", depth))
        elif not kind or "javascript" in kind or kind == "module":
            for match in _WINDOW_STATE.finditer(text[:200_000]):
                name = match.group(1) or match.group(2)
                if name and not _hashlike(name.strip("_")):
                    yield f"state:window.{name}"
