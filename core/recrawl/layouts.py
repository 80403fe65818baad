"""The layout a re-crawl record was made under: the site's accepted fingerprint baseline.

A re-crawl skips a page when something recorded at the item's last full fetch still
matches: its listing card's hash (``core.recrawl.cards``), its page validators (a 304,
``crawlers.fetch.conditional``). Either only says the page is as it was when the spider
could read it; once an operator accepts a new baseline (a layout change the structure
gate saw, ``fingerprints.baselines.versions.accept_baseline``), the spider may no longer read that
page, and an old record must not stand for its item. So every record carries the id of
the baseline it was made under, and a record of another layout is void (the page is
fetched and parsed in full, its record made again).

The id is a digest of the site's ``baseline.json`` as the structure gate reads it
(``FINGERPRINT_SITES_DIR``, else ``fingerprints/sites``): recomputing a baseline from the
same fixtures writes the same file and keeps the id; accepting another changes it. The
producer records the id of each job it starts (``{site}:job:<job>:layout``, written by
``core.frontier.queue.RedisFrontier.start_job``), in the process that ran the gate and the
approval, so a job's workers, whichever image or checkout they run from, agree on it;
a worker of a job without one (local mode, a job started by hand) uses its own file's.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from core.config import REPO_ROOT, fingerprint_sites_dir

BASELINE_FILE = "baseline.json"  # fingerprints.baselines.store.BASELINE_FILE
# The id of a site without a baseline: records still carry one, so "no baseline" is a
# layout like any other (accepting a first baseline voids the records made without).
NO_BASELINE = "none"
ID_CHARS = 16


def sites_dir() -> Path:
    """Where the structure gate keeps each site's baseline (``FINGERPRINT_SITES_DIR``)."""
    return fingerprint_sites_dir(REPO_ROOT / "fingerprints" / "sites")


def baseline_id(site: str, directory: Path | None = None) -> str:
    """The id of ``site``'s accepted baseline: the first hex digits of its file's SHA-256
    (``NO_BASELINE`` when the site has none)."""
    path = (directory or sites_dir()) / site / BASELINE_FILE
    try:
        data = path.read_bytes()
    except OSError:  # none (or unreadable): no record made under a baseline applies
        return NO_BASELINE
    return hashlib.sha256(data).hexdigest()[:ID_CHARS]
