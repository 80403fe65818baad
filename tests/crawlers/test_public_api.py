"""The crawl code uses Scrapy's and its plugins' public API only (crawlers/compat.py aside).

Two ways a library upgrade breaks a plugin silently: overriding a private method of a
library class (the override stops being called) and reading a private attribute of a
library object (it disappears). Both are checked over every module under crawlers/:
overrides by introspection of the loaded classes, private attribute reads and imports
by the source's syntax tree. crawlers/compat.py is the one module allowed to name them.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

import crawlers
from tests.source import parsed

LIBRARIES = ("scrapy", "scrapy_playwright", "scrapy_redis", "rotating_proxies", "twisted")
GUARDED = "crawlers.compat"
CRAWLERS_DIR = Path(crawlers.__file__).resolve().parent
# Names our own code binds to library objects, whose private attributes we must not read.
LIBRARY_OBJECTS = {"crawler", "engine", "scraper", "slot", "downloader", "handler", "signals"}


def crawl_modules() -> list[str]:
    names = [
        info.name
        for info in pkgutil.walk_packages([str(CRAWLERS_DIR)], prefix="crawlers.")
        if info.name != GUARDED
    ]
    return sorted(names)


def private(name: str) -> bool:
    # _abc_impl: the abc module's bookkeeping on every ABC subclass, not an override.
    return name.startswith("_") and not name.startswith("__") and name != "_abc_impl"


def private_overrides(module_name: str) -> list[str]:
    module = importlib.import_module(module_name)
    found = []
    for cls_name, cls in inspect.getmembers(module, inspect.isclass):
        if cls.__module__ != module_name:
            continue
        library_bases = [b for b in cls.__mro__[1:] if b.__module__.startswith(LIBRARIES)]
        for name in vars(cls):
            if private(name) and any(name in vars(base) for base in library_bases):
                found.append(f"{module_name}.{cls_name}.{name}")
    return found


def private_reads(source: str, filename: str) -> list[str]:
    found = []
    for node in ast.walk(parsed(source, filename)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(LIBRARIES):
            found += [f"{filename}: import {a.name}" for a in node.names if private(a.name)]
        elif isinstance(node, ast.Attribute) and private(node.attr):
            base = node.value
            base_name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
            if base_name in LIBRARY_OBJECTS:
                found.append(f"{filename}:{node.lineno}: {base_name}.{node.attr}")
        elif isinstance(node, ast.Attribute) and node.attr == "__func__":
            found.append(f"{filename}:{node.lineno}: __func__")
    return found


def test_no_crawl_class_overrides_a_private_library_method() -> None:
    assert [found for name in crawl_modules() for found in private_overrides(name)] == []


def test_no_crawl_module_reads_a_private_library_attribute() -> None:
    found = []
    for path in sorted(CRAWLERS_DIR.rglob("*.py")):
        if path.name != "compat.py":
            found += private_reads(path.read_text(), str(path.relative_to(CRAWLERS_DIR)))
    assert found == []


def test_the_checks_catch_what_they_look_for() -> None:
    # The source scan, on the very uses issue 13 found (they must each be reported).
    source = (
        "from scrapy.core.engine import _Slot\n"
        "scheduler = self.crawler.engine._slot.scheduler\n"
        "spider = Spider.from_crawler.__func__(cls, crawler)\n"
        "ours = self._private_state\n"
    )
    assert private_reads(source, "x.py") == [
        "x.py: import _Slot",
        "x.py:2: engine._slot",
        "x.py:3: __func__",
    ]
    # The override check, on a class overriding a private method of Scrapy's scheduler.
    module = type(inspect)("crawlers_probe")
    source = (
        "from scrapy.core.scheduler import Scheduler\n"
        "class Probe(Scheduler):\n"
        "    def _dqpush(self, request):\n"
        "        return None\n"
        "    def _own_helper(self):\n"
        "        return None\n"
    )
    exec(compile(source, "crawlers_probe.py", "exec"), module.__dict__)
    module.Probe.__module__ = "crawlers_probe"
    sys.modules["crawlers_probe"] = module
    try:
        assert private_overrides("crawlers_probe") == ["crawlers_probe.Probe._dqpush"]
    finally:
        del sys.modules["crawlers_probe"]
