"""Proposed baselines: what a drifted (or changed) sample would make the new baseline.

The gate never replaces ``baseline.json``: a structure that drifted is proposed for
review, one file per gate run under ``fingerprints/sites/<site>/proposed/<UTC
timestamp>.json`` (same JSON as ``baseline.json``). Accepting one is a deliberate step:
copy it over ``baseline.json`` after review, or approve it where the flow asks.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fingerprints.baselines.store import SITES_DIR, dumps, site_dir

PROPOSED_DIR = "proposed"


def proposed_dir(site: str, sites_dir: Path = SITES_DIR) -> Path:
    return site_dir(site, sites_dir) / PROPOSED_DIR


def save_proposed_baseline(
    site: str,
    baseline: Mapping[str, Any],
    *,
    sites_dir: Path = SITES_DIR,
    now: dt.datetime | None = None,
) -> Path:
    """Write ``baseline`` as a new proposal; never overwrites a file (nor baseline.json)."""
    moment = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    stamp = moment.strftime("%Y%m%dT%H%M%SZ")
    directory = proposed_dir(site, sites_dir)
    directory.mkdir(parents=True, exist_ok=True)
    text = dumps(dict(baseline))
    for attempt in range(100):
        path = directory / (f"{stamp}.json" if attempt == 0 else f"{stamp}-{attempt}.json")
        try:
            with path.open("x", encoding="utf-8") as handle:  # "x": fails if it exists
                handle.write(text)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"{directory}: 100 proposals at {stamp} already")
