"""Versioned baselines: accepting a proposed structure keeps the baseline it replaces.

A baseline accepted from a proposal (the gate's ``proposed_baseline``, approved by an
operator in the Prefect UI) becomes the site's ``baseline.json``; the one it replaces is
archived first, and an index records who accepted what and why::

    fingerprints/sites/<site>/baseline.json                            the current baseline
    fingerprints/sites/<site>/history/baseline-<UTC timestamp>.json    a replaced baseline
    fingerprints/sites/<site>/history/index.json                       one entry per acceptance

Every file is written to a temporary name and renamed into place, so a reader (the gate
of another run) never sees half a file. Going back to an older version is copying its
archived file over ``baseline.json`` (a reviewable diff, like any baseline change).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fingerprints.baselines.store import (
    BASELINE_FILE,
    SITES_DIR,
    BaselineError,
    SiteBaseline,
    dumps,
    save_baseline,
    site_dir,
)

HISTORY_DIR = "history"
INDEX_FILE = "index.json"


@dataclass(frozen=True)
class BaselineVersion:
    """One acceptance: when, by whom, why, and where the replaced baseline went."""

    accepted_at: str  # ISO 8601, UTC
    by: str  # who accepted it (e.g. the Prefect flow run)
    note: str  # why (the operator's note)
    sha256: str  # of the accepted baseline.json
    previous: str | None  # the replaced baseline, relative to the site directory

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def history_dir(site: str, sites_dir: Path = SITES_DIR) -> Path:
    return site_dir(site, sites_dir) / HISTORY_DIR


def accept_baseline(
    site: str,
    proposed: Mapping[str, Any],
    *,
    sites_dir: Path = SITES_DIR,
    note: str = "",
    by: str = "",
    now: dt.datetime | None = None,
) -> Path:
    """Make ``proposed`` (SiteBaseline-shaped JSON) the site's baseline; returns its path.

    The current baseline, if any, is archived under ``history/`` first. Accepting the
    baseline that is already current writes nothing (a resumed or retried run accepting
    the same proposal twice leaves one history entry). Raises ``BaselineError`` for a
    proposal that is not a baseline of this site.
    """
    baseline = SiteBaseline.from_dict(proposed, source=f"proposed baseline for {site!r}")
    if baseline.site != site:
        raise BaselineError(f"proposed baseline is for site {baseline.site!r}, not {site!r}")
    text = dumps(baseline.to_dict())
    current = site_dir(site, sites_dir) / BASELINE_FILE
    previous_text = current.read_text(encoding="utf-8") if current.exists() else None
    if previous_text == text:
        return current
    stamp = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    archived: str | None = None
    if previous_text is not None:
        target = _archive_name(history_dir(site, sites_dir), stamp)
        _write_atomic(target, previous_text)
        archived = target.relative_to(site_dir(site, sites_dir)).as_posix()
    path = save_baseline(baseline, sites_dir)
    version = BaselineVersion(
        accepted_at=stamp.isoformat(timespec="seconds"),
        by=by,
        note=note,
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        previous=archived,
    )
    entries = [v.to_dict() for v in baseline_history(site, sites_dir=sites_dir)]
    _write_atomic(history_dir(site, sites_dir) / INDEX_FILE, dumps([version.to_dict(), *entries]))
    return path


def baseline_history(site: str, *, sites_dir: Path = SITES_DIR) -> list[BaselineVersion]:
    """The site's acceptances, newest first (empty when none was ever accepted)."""
    path = history_dir(site, sites_dir) / INDEX_FILE
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except ValueError as exc:
        raise BaselineError(f"{path}: not JSON ({exc})") from exc
    try:
        return [BaselineVersion(**entry) for entry in entries]
    except TypeError as exc:
        raise BaselineError(f"{path}: malformed history index ({exc})") from exc


def _archive_name(directory: Path, stamp: dt.datetime) -> Path:
    """``baseline-<timestamp>.json``, with a counter when one second saw two acceptances."""
    base = f"baseline-{stamp.strftime('%Y%m%dT%H%M%SZ')}"
    candidate = directory / f"{base}.json"
    counter = 1
    while candidate.exists():
        counter += 1
        candidate = directory / f"{base}-{counter}.json"
    return candidate


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
