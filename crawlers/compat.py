"""The one home of every private Scrapy / scrapy-playwright attribute the platform uses.

Public extension points (settings, signals, middlewares, ``BaseScheduler``, the
download handler's ``download_request``) come first. Where nothing public can express
what we need, the private name is declared here, in ``PRIVATE_USES``, and nowhere else
names it. ``check_private_api()`` runs at start-up (the add-on calls it) and fails
loudly, naming the installed version, when an upgrade removed one of them: a Scrapy or
scrapy-playwright upgrade must break at start, never silently mid-crawl.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version


class PrivateApiMissing(RuntimeError):
    """An installed library no longer has a private attribute the platform relies on."""


@dataclass(frozen=True)
class PrivateUse:
    """``module:qualname`` of a class (or module) that must have ``attribute``."""

    distribution: str  # the PyPI distribution that provides it, for the version in errors
    target: str  # "package.module:Class" or "package.module"
    attribute: str
    why: str  # what the platform uses it for, one line

    def resolve(self) -> object:
        module_name, _, qualname = self.target.partition(":")
        obj: object = importlib.import_module(module_name)
        for part in filter(None, qualname.split(".")):
            obj = getattr(obj, part)
        return obj


# Every private use of the platform, each with the reason no public API serves.
PRIVATE_USES: tuple[PrivateUse, ...] = ()


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
            present = hasattr(use.resolve(), use.attribute)
        except (ImportError, AttributeError):
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
