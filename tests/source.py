"""The platform's source files parsed once per test process, however many checks walk them
(private uses, public API, setting fallbacks, environment reads). Callers only read the
trees: they are shared."""

from __future__ import annotations

import ast
import functools


@functools.cache
def parsed(source: str, filename: str = "<unknown>") -> ast.Module:
    return ast.parse(source, filename)
