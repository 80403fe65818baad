"""Watching a flow run in the Prefect UI with headless Chromium, as an operator would.

Pages of Prefect 3's UI used here: the flow run page (``/runs/flow-run/<id>``) with its
Artifacts tab, whose cards open an artifact's page; a progress artifact's page reads
``Progress: N%``, a table artifact's page shows the table.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Browser, Page, sync_playwright

from crawlers import defaults

PROGRESS = re.compile(r"Progress:\s*([0-9]+(?:\.[0-9]+)?)%")


@contextmanager
def chromium() -> Iterator[Browser]:
    options = defaults.PLAYWRIGHT_LAUNCH_OPTIONS
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=options["executable_path"], headless=True, args=options["args"]
        )
        try:
            yield browser
        finally:
            browser.close()


class RunPage:
    """One flow run in the UI; screenshots go to ``shots`` as ``<n>-<name>.png``."""

    def __init__(self, browser: Browser, ui_url: str, run_id: str, shots: Path) -> None:
        self.page: Page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.set_default_timeout(30_000)
        self.ui_url = ui_url.rstrip("/")
        self.run_id = run_id
        self.shots = shots
        self.taken = 0

    def screenshot(self, name: str) -> Path:
        self.taken += 1
        path = self.shots / f"{self.taken}-{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def open_artifact(self, key: str) -> None:
        """The run page, its Artifacts tab, then the artifact ``key``'s own page."""
        self.page.goto(f"{self.ui_url}/runs/flow-run/{self.run_id}")
        self.page.get_by_text("Artifacts", exact=True).first.click()
        self.page.get_by_text(key, exact=True).last.click()
        self.page.wait_for_url(re.compile(r".*/artifacts/artifact/.*"))
        # An artifact's page offers its raw data once it has loaded.
        self.page.get_by_text("Show raw data").first.wait_for()

    def wait_for_text(self, pattern: str, timeout: float = 30.0) -> str:
        """The page's text once ``pattern`` (a regex) is found in it."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.text()
            if re.search(pattern, text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} not on {self.page.url}: {text[-1500:]}")
            self.page.wait_for_timeout(250)

    def progress(self, timeout: float = 30.0) -> float:
        """The ``Progress: N%`` the artifact page shows."""
        deadline = time.monotonic() + timeout
        while True:
            match = PROGRESS.search(self.page.inner_text("body"))
            if match:
                return float(match.group(1))
            if time.monotonic() > deadline:
                raise AssertionError(f"no 'Progress: N%' on {self.page.url}")
            self.page.wait_for_timeout(250)

    def text(self) -> str:
        return self.page.inner_text("body")

    def reload(self) -> None:
        self.page.reload()
