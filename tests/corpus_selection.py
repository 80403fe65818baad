"""The corpus sites the long onboarding tests run (each a scaffold, a crawl or a flow run
of minutes): ``ONBOARDING_SITES=all`` runs every one, a comma-separated list those; by
default a few of unlike kinds (product cards, a job board listing -> detail, many items
per page...; each test names its own), so the e2e tier keeps to CI's time.
``python -m bench.onboarding`` measures every site."""

from __future__ import annotations

import os

from standins.plain_sites.corpus import CORPUS


def onboarding_sites(default: tuple[str, ...]) -> list[str]:
    chosen = os.environ.get("ONBOARDING_SITES", "").strip()
    if chosen == "all":
        return list(CORPUS)
    names = [name.strip() for name in chosen.split(",") if name.strip()] or list(default)
    unknown = sorted(set(names) - set(CORPUS))
    if unknown:
        raise ValueError(f"ONBOARDING_SITES names no corpus site: {', '.join(unknown)}")
    return names
