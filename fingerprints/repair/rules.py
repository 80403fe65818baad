"""A repair suggestion's rule, run on a page: a CSS selector (``::text`` /
``::attr(name)``, else the element's whole text), an XPath, or a JSON path into a script
(``json: script#__STATE__ -> product.pricing.currencyCode``; ``[n]`` for list entries)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from parsel import Selector

RuleKind = Literal["css", "xpath", "json"]

_JSON_STEP = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


class RepairError(RuntimeError):
    """A rule that cannot be run (a malformed selector or path); safe to show."""


@dataclass(frozen=True)
class Rule:
    """Where a field's value is on a page: a CSS selector, an XPath, or a JSON path.

    ``json``: ``selector`` is the CSS selector of the script element(s) and ``path`` the
    dotted path into its JSON (``[n]`` for list entries); the first script in which the
    path resolves gives the value.
    """

    kind: RuleKind
    selector: str
    path: str = ""

    def __str__(self) -> str:
        if self.kind == "json":
            return f"json: {self.selector} -> {self.path}"
        return f"{self.kind}: {self.selector}"

    def values(self, page: Selector) -> list[Any]:
        """Every value the rule finds on the page (empty strings dropped)."""
        try:
            if self.kind == "json":
                return self._json_values(page)
            found = page.css(self.selector) if self.kind == "css" else page.xpath(self.selector)
        except (ValueError, SyntaxError) as exc:  # cssselect/lxml parse errors
            raise RepairError(
                f"invalid {self.kind} selector: {type(exc).__name__}: {exc}"
            ) from None
        values = []
        for node in found:
            if isinstance(node.root, str):  # ::text, ::attr(), text(), @attr
                text = _clean(node.root)
            else:
                text = _clean(" ".join(node.xpath(".//text()").getall()))
            if text:
                values.append(text)
        return values

    def _json_values(self, page: Selector) -> list[Any]:
        steps = _json_steps(self.path)
        try:
            scripts = page.css(self.selector)
        except (ValueError, SyntaxError) as exc:
            raise RepairError(f"invalid css selector: {type(exc).__name__}: {exc}") from None
        for script in scripts:
            text = script.xpath("string()").get() or ""
            try:
                data = json.loads(text)
            except ValueError:
                continue
            value = _walk(data, steps)
            if value is not None and value != "":
                return value if isinstance(value, list) else [value]
        return []


def _clean(text: str) -> str:
    return " ".join(text.split())


def _json_steps(path: str) -> list[str | int]:
    path = path.strip().removeprefix("$").lstrip(".")
    if not path:
        raise RepairError("empty JSON path")
    steps: list[str | int] = []
    for index, key in _JSON_STEP.findall(path):
        steps.append(int(index) if index else key)
    return steps


def _walk(data: Any, steps: Sequence[str | int]) -> Any:
    for step in steps:
        if isinstance(step, int):
            data = data[step] if isinstance(data, list) and step < len(data) else None
        else:
            if isinstance(data, list):
                # A key on a list: the first entry that has it (JSON-LD @graph, offers).
                data = next(
                    (entry for entry in data if isinstance(entry, dict) and step in entry), None
                )
            data = data.get(step) if isinstance(data, dict) else None
        if data is None:
            return None
    return data
