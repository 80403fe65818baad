"""The sites without structured data (``python -m plain_sites <kind>``) as supervised
local services: ``PlainSite("werkstatt")``, ``PlainSite("sayings")``."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from harness.base import LocalSite


class PlainSite(LocalSite):
    start_timeout = 30.0
    stop_timeout = 10.0

    def __init__(
        self,
        kind: str,
        *,
        seed: int = 11,
        items: int = 120,
        port: int | None = None,
        run_dir: Path | None = None,
    ) -> None:
        super().__init__(port=port, run_dir=run_dir)
        self.name = f"plain-site-{kind}"
        self.kind = kind
        self.seed = seed
        self.items = items

    def command(self) -> Sequence[str]:
        return [
            sys.executable,
            "-m",
            "plain_sites",
            self.kind,
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--seed",
            str(self.seed),
            "--items",
            str(self.items),
        ]
