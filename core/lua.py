"""The platform's Lua scripts for Redis, read from ``.lua`` files beside their Python client.

A package that runs scripts keeps them in its ``lua/`` directory, one file per script, each
headed by its KEYS and ARGV: ``load_script("core.frontier", "lease")`` is the text of
``core/frontier/lua/lease.lua``, read once per process (``importlib.resources``, so an
installed wheel reads them as a checkout does; pyproject.toml's package data ships them).

A fragment several scripts share (Redis' clock, a Lua function) is one file of its own in
the same directory, pulled in by a line ``--#include <name>``: the loader replaces that line
with the fragment's text (which may include others), so each script sent to Redis is whole
and every fragment has one copy.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files

_INCLUDE = re.compile(r"^--#include ([a-z0-9_]+)\n", re.MULTILINE)


@cache
def load_script(package: str, name: str) -> str:
    """The script ``<package>/lua/<name>.lua`` with its includes expanded."""
    text = (files(package) / "lua" / f"{name}.lua").read_text(encoding="utf-8")
    return _INCLUDE.sub(lambda m: load_script(package, m.group(1)), text)
