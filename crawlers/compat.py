"""The one home of every private attribute or meta key of a library the platform uses.

Public extension points (settings, signals, middlewares, ``BaseScheduler``, the
download handler's ``download_request``) come first. Where nothing public can express
what we need, the private name is declared here, in ``PRIVATE_USES``, with why.
``check_private_api()`` runs at start-up (the add-on calls it) and fails loudly, naming
the installed version, when an upgrade removed one of them: a library upgrade must break
at start, never silently mid-crawl. A test reads the platform's source (core, crawlers,
fingerprints, orchestration, indexing, search) and fails unless the private names it
finds there are exactly the ones declared here (tests/crawlers/test_compat.py).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, files, version
from typing import Literal

# "attribute": hasattr(target, attribute). "instance attribute": set in the library's
# own source as ``self.<attribute> =`` (absent from the class until __init__ ran).
# "meta key": the library's source names the key (a ``request.meta`` entry it reads or
# sets). For the last two the target (a class or module) must still resolve too.
# "module": ``<target>.<attribute>`` is an importable (private) submodule.
Kind = Literal["attribute", "instance attribute", "meta key", "module"]


class PrivateApiMissing(RuntimeError):
    """An installed library no longer has a private attribute the platform relies on."""


@dataclass(frozen=True)
class PrivateUse:
    """A private ``attribute`` of ``target`` (``module:qualname`` of a class, or a module)."""

    distribution: str  # the PyPI distribution that provides it, for the version in errors
    target: str  # "package.module:Class" or "package.module"
    attribute: str
    why: str  # what the platform uses it for, one line
    kind: Kind = "attribute"

    def resolve(self) -> object:
        module_name, _, qualname = self.target.partition(":")
        obj: object = importlib.import_module(module_name)
        for part in filter(None, qualname.split(".")):
            obj = getattr(obj, part)
        return obj

    def present(self) -> bool:
        try:
            target = self.resolve()
            if self.kind == "module":
                importlib.import_module(f"{self.target}.{self.attribute}")
                return True
        except (ImportError, AttributeError):
            return False
        if self.kind == "attribute":
            return hasattr(target, self.attribute)
        name = re.escape(self.attribute)
        pattern = (
            rf"\bself\.{name}\s*[:=]" if self.kind == "instance attribute" else rf"[\"']{name}[\"']"
        )
        return _in_distribution_source(self.distribution, re.compile(pattern))


# Every private use of the platform, each with the reason no public API serves.
PRIVATE_USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        "elasticsearch",
        "elasticsearch:Elasticsearch",
        "_headers",
        "the Authorization header a built client sends, to name the user it authenticates "
        "as (core.es_access.client_kwargs): the client has no public read of its credentials",
        kind="instance attribute",
    ),
    PrivateUse(
        "Twisted",
        "twisted.web",
        "_newclient",
        "HTTPClientParser, the response parser of Scrapy's HTTP/1.1 client: its header line "
        "limit raised to a browser's (DOWNLOAD_MAX_HEADER_SIZE), a longer line failing with "
        "its own error (crawlers.fetch.header_limit); Twisted has no public setting for it",
        kind="module",
    ),
    PrivateUse(
        "lxml",
        "lxml.etree",
        "_Element",
        "the class of every parsed element (isinstance checks, annotations): lxml's API "
        "reference documents it as the element type, with no public alias",
    ),
)


def http11_response_parser() -> type:
    """Twisted's HTTP/1.1 response parser, whose header line limit crawlers.fetch.header_limit
    sets (declared above: twisted.web._newclient)."""
    from twisted.web import _newclient

    parser: type = _newclient.HTTPClientParser
    return parser


def _in_distribution_source(distribution: str, pattern: re.Pattern[str]) -> bool:
    for path in files(distribution) or ():
        if path.suffix == ".py" and pattern.search(path.read_text(encoding="utf-8")):
            return True
    return False


def _installed(distribution: str) -> str:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "not installed"


def missing_private_api(uses: tuple[PrivateUse, ...] = PRIVATE_USES) -> list[str]:
    """One line per private use the installed libraries no longer provide."""
    problems = []
    for use in uses:
        try:
            present = use.present()
        except PackageNotFoundError:
            present = False
        if not present:
            problems.append(
                f"{use.distribution} {_installed(use.distribution)} has no "
                f"{use.target}.{use.attribute} (used for: {use.why}); pin the version "
                "the platform was tested with (pyproject.toml) or port crawlers/compat.py"
            )
    return problems


def check_private_api(uses: tuple[PrivateUse, ...] = PRIVATE_USES) -> None:
    """Raise ``PrivateApiMissing`` naming every private attribute that is gone."""
    problems = missing_private_api(uses)
    if problems:
        raise PrivateApiMissing("; ".join(problems))
