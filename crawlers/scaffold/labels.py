"""Labelled values: what a page prints beside a value to say what it is, in the idioms
sites use (``<dt>``/``<dd>``, ``<th>``/``<td>``, a two-cell row, ``<b>Label:</b> value``,
a "Label: value" line, a label element followed by its value), and the platform field
each label names (``labels.toml``: English, Spanish, Portuguese, Italian, French and
German words). Pure functions over parsel selectors."""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crawlers.scaffold.candidates import css_candidates, exact_path

__all__ = ["Labelled", "field_for", "label_maps", "label_words", "labelled", "xpath_literal"]

MAX_LABEL = 40  # characters: longer is a sentence, not a label
_BRACKETS = re.compile(r"\([^)]*\)|\[[^]]*\]")
_WORD = re.compile(r"[^\W_]+(?:['\u2019.-][^\W_]+)*|[#€£$²/%]", re.UNICODE)
_LABEL_TAGS = ("strong", "b", "span", "label", "em", "dt", "th", "td", "p", "div", "h4", "h5")


@functools.cache
def _table() -> Mapping[str, Any]:
    return tomllib.loads((Path(__file__).with_name("labels.toml")).read_text(encoding="utf-8"))


@functools.cache
def label_words() -> dict[str, tuple[tuple[str, ...], ...]]:
    """Field -> its labels, each as a tuple of words."""
    return {
        name: tuple(tuple(_words(label)) for label in labels)
        for name, labels in _table()["fields"].items()
    }


@functools.cache
def label_maps(languages: tuple[str, ...] | None = None) -> dict[str, dict[str, Any]]:
    """Map name -> {printed value (lower case): stored value}, in English and the base
    ``languages`` (``("it",)``; None: every language)."""
    maps: dict[str, dict[str, Any]] = {}
    wanted = (
        None if languages is None else {"en", *(lang.split("-")[0].lower() for lang in languages)}
    )
    for name, by_language in _table()["maps"].items():
        out: dict[str, Any] = {}
        for language, table in by_language.items():
            if wanted is not None and language not in wanted:
                continue
            for stored, printed in table.items():
                value: Any = {"true": True, "false": False}.get(stored, stored)
                for phrase in printed:
                    out.setdefault(phrase.casefold(), value)
        maps[name] = out
    return maps


def all_fields() -> tuple[str, ...]:
    return tuple(label_words())


def _words(text: str) -> list[str]:
    return _WORD.findall(_BRACKETS.sub(" ", text.casefold()))


def field_for(label: str, wanted: Iterable[str]) -> str | None:
    """The field of ``wanted`` that ``label`` names (its longest matching label wins;
    ``@id`` stands for the item's id field). A label is short: its words are the label's
    words, or start with them ("Price (excl. tax)", "Salary range")."""
    if len(label) > MAX_LABEL:
        return None
    words = _words(label.strip().rstrip(":").strip())
    if not words or len(words) > 6:
        return None
    best: tuple[int, str] | None = None
    table = label_words()
    for name in wanted:
        for phrase in table.get(name, ()):
            n = len(phrase)
            if n and tuple(words[:n]) == phrase and len(words) <= n + 2:
                exact = len(words) == n
                score = n * 2 + exact
                if best is None or score > best[0]:
                    best = (score, name)
    return best[1] if best else None


def xpath_literal(text: str) -> str | None:
    if "'" not in text:
        return f"'{text}'"
    if '"' not in text:
        return f'"{text}"'
    return None


@dataclass(frozen=True)
class Labelled:
    """A label and its value on a unit: the value's text, the element holding it, and
    rules reading it (the most telling first)."""

    label: str
    value: str
    element: Any
    rules: tuple[dict[str, Any], ...]
    exact: dict[str, Any]


def _text(element: Any) -> str:
    return " ".join(" ".join(element.xpath(".//text()").getall()).split())


def labelled(root: Any, on_page: bool) -> list[Labelled]:
    """Every labelled value under ``root`` (a page, or a card: its rules start ``./``)."""
    scope = "//" if on_page else ".//"
    found: list[Labelled] = []
    seen: set[Any] = set()
    for key in root.xpath(f"{scope}dt | {scope}th | {scope}tr/td[1]"):
        label = _text(key)
        cell = key.xpath("following-sibling::*[self::dd or self::td][1]")
        if not label or len(label) > MAX_LABEL or not cell or not _text(cell[0]):
            continue
        holder = key.xpath("ancestor::*[self::table or self::dl][1]")
        rules: list[dict[str, Any]] = []
        if holder:
            for css in css_candidates(holder[0], root)[:4]:
                rules.append({"table": css, "label": label.rstrip(":").strip()})
        literal = xpath_literal(label)
        if literal:
            tag = key.root.tag if key.root.tag != "td" else "td"
            nxt = "dd" if tag == "dt" else "td"
            rules.append(
                {"xpath": f"{scope}{tag}[normalize-space()={literal}]/following-sibling::{nxt}[1]"}
            )
        found.append(Labelled(label, _text(cell[0]), cell[0], tuple(rules), _exact(cell[0], root)))
        seen.add(cell[0].root)
    for key in root.xpath(
        f"{scope}*[self::strong or self::b or self::span or self::label or self::em]"
    ):
        label = _text(key)
        if (
            not label.endswith(":")
            or len(label) > MAX_LABEL
            or key.xpath("ancestor::dt|ancestor::th")
        ):
            continue
        tail = key.xpath("following-sibling::node()[1]")
        if not tail:
            continue
        raw = tail[0].root if isinstance(tail[0].root, str) else _text(tail[0])
        value = " ".join(raw.split())
        literal = xpath_literal(label)
        if not value or literal is None:
            continue
        tag = key.root.tag
        rules = [
            {"xpath": f"{scope}{tag}[normalize-space()={literal}]/following-sibling::text()[1]"},
            {"xpath": f"{scope}{tag}[normalize-space()={literal}]/following-sibling::*[1]"},
        ]
        exact = {"xpath": exact_path(key, root) + "/following-sibling::node()[1]"}
        found.append(Labelled(label, value, key, tuple(rules), exact))
    for parent in root.xpath(f"{scope}*[text()[contains(., ':')]]"):
        if parent.root.tag in ("script", "style", "a", "option", "title"):
            continue
        for position, raw in enumerate(parent.xpath("text()").getall(), 1):
            own = " ".join(raw.split())
            match = re.match(r"^([^:]{2,40}):\s*(\S.*)$", own)
            if not match:
                continue
            label = match.group(1).strip()
            literal = xpath_literal(label + ":")
            if literal is None or not re.search(r"[^\W\d_]", label):
                continue
            shaping = {"re": rf"^\s*{re.escape(label)}:\s*(.+?)\s*$"}
            rule = {"xpath": f"{scope}text()[starts-with(normalize-space(), {literal})]"} | shaping
            exact = {"xpath": f"{exact_path(parent, root)}/text()[{position}]"} | shaping
            found.append(Labelled(label, match.group(2), parent, (rule,), exact))
    values = {phrase for table in label_maps().values() for phrase in table}
    for label, after in headed(root, on_page):
        value = _text(after)
        literal = xpath_literal(label)
        if not value or len(value) > 80 or literal is None or after.xpath(".//li|.//p"):
            continue
        if ":" in label or label.casefold() in values:
            continue  # a "Label: value" line, or a value ("In stock"), not a label
        heading = after.xpath("preceding-sibling::*[1]")[0]
        tag = heading.root.tag
        rule = {"xpath": f"{scope}{tag}[normalize-space()={literal}]/following-sibling::*[1]"}
        found.append(Labelled(label, value, after, (rule,), _exact(after, root)))
    return found


def _exact(element: Any, root: Any) -> dict[str, Any]:
    return {"xpath": exact_path(element, root)}


def headed(root: Any, on_page: bool) -> list[tuple[str, Any]]:
    """Headings (or a label element) and the element after them: ``<h2>Key features</h2>
    <ul>...`` -> ("Key features", the list)."""
    scope = "//" if on_page else ".//"
    out = []
    for heading in root.xpath(
        f"{scope}*[self::h2 or self::h3 or self::h4 or self::h5 or self::strong or self::p]"
    ):
        label = _text(heading)
        if not label or len(label) > MAX_LABEL:
            continue
        nxt = heading.xpath("following-sibling::*[1]")
        if nxt:
            out.append((label.rstrip(":").strip(), nxt[0]))
    return out


ALL_FIELDS = all_fields()
