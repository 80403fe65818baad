"""Writing what the scaffold proposes: the profile as commented TOML.

The standard library reads TOML but does not write it; profiles are small and their
values plain (strings, numbers, booleans, lists, inline tables), so this module writes
them itself, with the comments saying what was guessed. Regular expressions are written
as literal strings (``'^/product/[^/?#]+$'``: no doubled backslashes to review).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class Entry:
    key: str  # empty: ``value`` is a whole line (a comment)
    value: Any
    comment: str | None = None  # written after the value, on its line


@dataclass(frozen=True)
class TomlTable:
    name: str  # dotted, e.g. "pages.product.fields"
    entries: Sequence[Entry] = ()
    comments: Sequence[str] = field(default_factory=tuple)  # lines above the header


def key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else json.dumps(name, ensure_ascii=False)


def value(item: Any) -> str:
    """``item`` as a TOML value (inline tables and arrays for nested values)."""
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, int | float):
        return repr(item)
    if isinstance(item, str):
        plain = "'" not in item and not any(ord(c) < 32 or c == "\x7f" for c in item)
        if plain and ("\\" in item or '"' in item):
            return f"'{item}'"
        return json.dumps(item, ensure_ascii=False)
    if isinstance(item, Mapping):
        return "{" + ", ".join(f"{key(k)} = {value(v)}" for k, v in item.items()) + "}"
    if isinstance(item, list | tuple):
        return "[" + ", ".join(value(v) for v in item) + "]"
    raise TypeError(f"no TOML form for {type(item).__name__}")


def _entry(entry: Entry) -> str:
    if not entry.key:  # a line as it is: a commented hint
        return str(entry.value)
    text = f"{key(entry.key)} = "
    items = entry.value
    if isinstance(items, list | tuple) and len(value(items)) + len(text) > 96:
        # A long array one element a line, so a review diff shows each one.
        text += "[\n" + "".join(f"    {value(v)},\n" for v in items) + "]"
    else:
        text += value(items)
    return text + (f"  # {entry.comment}" if entry.comment else "")


def render(header: Sequence[str], top: Sequence[Entry], tables: Sequence[TomlTable]) -> str:
    lines = [f"# {line}" if line else "#" for line in header]
    lines += [_entry(entry) for entry in top]
    for table in tables:
        lines.append("")
        lines += [f"# {line}" if line else "#" for line in table.comments]
        lines.append(f"[{'.'.join(key(part) for part in table.name.split('.'))}]")
        lines += [_entry(entry) for entry in table.entries]
    return "\n".join(lines) + "\n"
