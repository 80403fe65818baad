"""A default lives in one place: crawlers/defaults.py.

The add-on applies it to every crawl (``crawlers.addon.install``, at 'addon' priority), so
a crawl component reads a setting without a fallback of its own: a literal fallback
beside it repeats the default (and drifts from it: the proxy middleware once said 30 s
where defaults.py said 60). The check reads every module under crawlers/ by its syntax
tree: ``settings.get*("NAME", literal)``, ``get*("NAME", default=literal)`` and
``get*("NAME") or literal`` for a NAME that defaults.py defines.
"""

from __future__ import annotations

import ast
from pathlib import Path

from scrapy import Spider
from scrapy.utils.test import get_crawler

import crawlers
from crawlers import defaults
from tests.source import parsed

CRAWLERS = Path(crawlers.__file__).resolve().parent
REPO = CRAWLERS.parent
GETTERS = frozenset(
    {"get", "getint", "getfloat", "getbool", "getlist", "getdict", "getdictorlist", "getwithbase"}
)
DEFAULTS = frozenset(name for name in dir(defaults) if name.isupper())
# Reads allowed a fallback ("path: SETTING"): none; a fallback naming the defaults module's
# constant (``defaults.MAX_LISTING_PAGES``) is not a literal and keeps one home.
REMAINING: frozenset[str] = frozenset()


def literal(node: ast.expr) -> bool:
    """A constant other than None (None is what a read without fallback gives)."""
    if isinstance(node, ast.UnaryOp):
        return literal(node.operand)
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return all(literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(
            k is not None and literal(k) and literal(v)
            for k, v in zip(node.keys, node.values, strict=True)
        )
    return isinstance(node, ast.Constant) and node.value is not None


def setting_read(node: ast.AST) -> tuple[str, ast.expr | None] | None:
    """(NAME, its fallback or None) of ``<x>.get*("NAME"[, fallback])`` for a default."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    if node.func.attr not in GETTERS or not node.args:
        return None
    first = node.args[0]
    if not (isinstance(first, ast.Constant) and first.value in DEFAULTS):
        return None
    fallback = node.args[1] if node.args[1:] else None
    for keyword in node.keywords:
        if keyword.arg == "default":
            fallback = keyword.value
    return str(first.value), fallback


def fallbacks(source: str, path: str) -> list[str]:
    """``path:line: NAME`` of every read of a default with a literal fallback."""
    found = []
    for node in ast.walk(parsed(source, path)):
        read = setting_read(node)
        if read and read[1] is not None and literal(read[1]):
            found.append(f"{path}:{node.lineno}: {read[0]}")
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            first = setting_read(node.values[0])
            if first and any(literal(value) for value in node.values[1:]):
                found.append(f"{path}:{node.lineno}: {first[0]}")
    return found


def crawl_fallbacks() -> list[str]:
    return [
        found
        for path in sorted(CRAWLERS.rglob("*.py"))
        if path.name != "defaults.py"
        for found in fallbacks(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    ]


def without_line(found: str) -> str:
    path, _, rest = found.partition(":")
    return f"{path}: {rest.partition(': ')[2]}"


def test_the_fetch_layer_reads_its_settings_without_fallbacks() -> None:
    assert [f for f in crawl_fallbacks() if f.startswith("crawlers/fetch/")] == []


def test_no_crawl_module_repeats_a_default_as_a_fallback() -> None:
    new = [f for f in crawl_fallbacks() if without_line(f) not in REMAINING]
    assert new == [], "read these without a fallback: the default is crawlers/defaults.py's"


def test_the_check_finds_every_form_of_fallback() -> None:
    source = (
        "a = settings.getfloat('ROTATING_PROXY_LOGSTATS_INTERVAL', 30)\n"
        "b = s.getint('BLOCK_RETRY_TIMES', default=3)\n"
        "c = settings.get('FETCH_IDENTITY') or 'browser'\n"
        "d = settings.getlist('RENDER_ABORT_RESOURCE_TYPES', ['image'])\n"
        "e = settings.getfloat('RETRY_BACKOFF_MAX', -1.0)\n"
        "ok = settings.getfloat('RETRY_BACKOFF_MAX')\n"
        "ok = settings.get('RETRY_BACKOFF_MAX', None)\n"
        "ok = settings.get('NOT_A_PLATFORM_SETTING', 5)\n"
        "ok = settings.get('RETRY_BACKOFF_MAX', other.value)\n"
    )
    assert fallbacks(source, "x.py") == [
        "x.py:1: ROTATING_PROXY_LOGSTATS_INTERVAL",
        "x.py:2: BLOCK_RETRY_TIMES",
        "x.py:3: FETCH_IDENTITY",
        "x.py:4: RENDER_ABORT_RESOURCE_TYPES",
        "x.py:5: RETRY_BACKOFF_MAX",
    ]


def test_a_crawler_with_the_add_on_has_every_default() -> None:
    """What makes reads without fallback safe: the add-on applies defaults.py to a crawler
    built the tests' way (get_crawler) as to `scrapy crawl` (the project's ADDONS)."""
    crawler = get_crawler(Spider, {"ADDONS": {"crawlers.addon.ScrapingPlatform": 0}})
    for name in ("ROTATING_PROXY_LOGSTATS_INTERVAL", "BLOCK_RETRY_TIMES", "RETRY_BACKOFF_BASE"):
        assert crawler.settings[name] == getattr(defaults, name)
    project = (REPO / "crawlers" / "settings.py").read_text(encoding="utf-8")
    assert 'ADDONS = {"crawlers.addon.ScrapingPlatform": 0}' in project
