"""One-line messages for profile errors: pydantic's report of a bad profile as
``politeness.concurrency_per_domain: expected an integer, got "sixteen"``, with a hint
for a misspelt key."""

from __future__ import annotations

import difflib
import json
import types
from collections.abc import Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from crawlers.profile_schema.values import Table

_EXPECTED = {
    "int_type": "an integer",
    "float_type": "a number",
    "finite_number": "a finite number",
    "bool_type": "true or false",
    "string_type": "a string",
    "tuple_type": "a list of strings",
    "list_type": "a list of strings",
    "dict_type": "a table",
    "model_type": "a table",
}
_BOUNDS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}


def describe(error: ValidationError, root: type[Table]) -> str:
    """The first problem of ``error`` (raised validating ``root``) as one line:
    ``key.path: expected ..., got ...``, with how many more there are."""
    problems = error.errors(include_url=False)
    first = problems[0]
    loc = tuple(part for part in first["loc"] if part != "[key]")  # a bad key: its own name
    key = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)
    # A whole-profile check names the key it is about itself (crawlers.profiles).
    key = str((first.get("ctx") or {}).get("key") or key)
    text = f"{key.lstrip('.')}: {_problem(first, loc, root)}"
    if len(problems) > 1:
        more = len(problems) - 1
        text += f" (and {more} more problem{'s' if more > 1 else ''})"
    return text


def _problem(error: ErrorDetails, loc: tuple[str | int, ...], root: type[Table]) -> str:
    kind, ctx, value = error["type"], error.get("ctx") or {}, error["input"]
    if kind == "missing":
        return "required key is missing"
    if kind == "extra_forbidden":
        known = _keys_at(root, loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), known, n=1)
        hint = f"did you mean {shown(close[0])}?" if close else f"known keys: {', '.join(known)}"
        return f"unknown key ({hint})"
    if kind == "expected":
        expected = ctx["expected"]
    elif kind == "literal_error":
        expected = "one of " + ctx["expected"].replace("'", '"')
    elif kind == "too_short":
        expected = f"at least {ctx['min_length']} entry"
    elif bound := next((b for b in _BOUNDS if b in ctx), None):
        expected = f"a value {_BOUNDS[bound]} {ctx[bound]:g}"
    else:
        expected = _EXPECTED.get(kind) or error["msg"].lower().removeprefix("input should be ")
    detail = f" ({ctx['detail']})" if ctx.get("detail") else ""
    if "got" in ctx:
        value = ctx["got"]
    return f"expected {expected}, got {shown(value)}{detail}"


def _keys_at(root: type[Table], parent: Sequence[str | int]) -> list[str]:
    """The keys the schema allows in the table at ``parent``, for a misspelt key's hint."""
    annotation: Any = root
    for part in parent:
        annotation = _table_type(annotation)
        if isinstance(part, int):  # tuple[Table, ...] / list[Table]: one of its entries
            annotation = get_args(annotation)[0]
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            fields = annotation.model_fields
            annotation = next(f.annotation for n, f in fields.items() if (f.alias or n) == part)
        else:  # dict[str, Table]: ``part`` is a name the profile chose
            annotation = get_args(annotation)[1]
    model = _table_type(annotation)
    return [field.alias or name for name, field in model.model_fields.items()]


def _table_type(annotation: Any) -> Any:
    """``Table | None`` -> ``Table``; ``Annotated[X, ...]`` -> ``X``."""
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        return next(arg for arg in get_args(annotation) if arg is not type(None))
    return annotation


def shown(value: Any) -> str:
    """A value the way TOML writes it (strings quoted), shortened."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, str | list | tuple):
        text = json.dumps(value, ensure_ascii=False, default=str)
        return text if len(text) <= 80 else text[:77] + "..."
    return str(value)
