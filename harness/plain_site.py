"""The sites without structured data (``python -m plain_sites <kind>``) as supervised
local services: ``PlainSite("werkstatt")``, ``PlainSite("sayings")``."""

from __future__ import annotations

from pathlib import Path

from harness.base import LocalSite


class PlainSite(LocalSite):
    module = "plain_sites"

    def __init__(
        self,
        kind: str,
        *,
        seed: int = 11,
        items: int = 120,
        port: int | None = None,
        run_dir: Path | None = None,
    ) -> None:
        super().__init__(seed=seed, port=port, run_dir=run_dir, name=f"plain-site-{kind}")
        self.kind = kind
        self.items = items

    def site_arguments(self) -> list[str]:
        return [self.kind, "--items", str(self.items)]
