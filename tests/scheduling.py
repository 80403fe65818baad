"""How ``--dist loadfile`` hands the suite to the xdist workers.

xdist's file scopes, with one change: each package in ``ONE_WORKER_PACKAGES`` is one
scope. Their package-scoped fixtures (a catalog stored, embedded and indexed) take
a minute, and xdist builds a package fixture once per worker that runs any file of the
package; as one scope the package builds them once. Being large, it is handed out
among the first scopes (xdist orders scopes by test count).
"""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadFileScheduling

# Test packages (paths as in node ids) whose conftest defines package-scoped fixtures;
# tests/test_scheduling.py checks that every such package is listed.
ONE_WORKER_PACKAGES = ("tests/search/",)


def scope_of(nodeid: str) -> str:
    """The work unit of a test: its package when listed above, else its file."""
    for package in ONE_WORKER_PACKAGES:
        if nodeid.startswith(package):
            return package
    return nodeid.split("::", 1)[0]


class PackageFixtureScheduling(LoadFileScheduling):
    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid)


def make_scheduler(config: Any, log: Any) -> LoadFileScheduling | None:
    """For ``--dist loadfile`` (None: xdist's own scheduler for other modes)."""
    if config.getoption("dist") != "loadfile":
        return None
    return PackageFixtureScheduling(config, log)
