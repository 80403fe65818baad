"""Level 2's allowlist, learned from the machine's own Chromium at start.

A real edge knows which ClientHellos real browsers send; the stand-in asks the one
browser it can trust, Debian's Chromium, to fetch ``LEARN_PATH`` once and allows the
fingerprint(s) of the connections that did. A Chromium update therefore moves the
allowlist with it, as vendors' lists follow browser releases.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

LEARN_TIMEOUT = 60.0
# No first-run, sync, component or background traffic: this machine has no internet,
# and without these Chromium tries to call home (and may stall until it times out).
QUIET_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
)


class LearnError(RuntimeError):
    """Chromium could not be run, or did not fetch the learn page."""


def learn_with_chromium(chromium: str | None, url: str, timeout: float = LEARN_TIMEOUT) -> str:
    """Have Chromium fetch ``url`` (the stand-in's learn page); returns the page's DOM.

    The fingerprints are recorded by the server as the request arrives; the DOM only
    confirms that Chromium got the page.
    """
    if not chromium or not Path(chromium).exists():
        raise LearnError(
            f"no Chromium at {chromium or '(none found)'}: levels 2+ learn its TLS "
            "fingerprint at start (install Debian's chromium, or pass --chromium PATH)"
        )
    with tempfile.TemporaryDirectory(prefix="bot-defense-learn-") as profile:
        argv = [
            chromium,
            *QUIET_FLAGS,
            f"--user-data-dir={profile}",
            "--ignore-certificate-errors",
            "--dump-dom",
            url,
        ]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise LearnError(f"{chromium} did not fetch {url} within {timeout:.0f}s") from exc
        except OSError as exc:
            raise LearnError(f"{chromium} could not be run: {exc}") from exc
    if done.returncode != 0 or 'id="fingerprint"' not in done.stdout:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise LearnError(f"{chromium} did not fetch {url} (exit {done.returncode}): {tail}")
    return done.stdout
