"""The local sites of ``standins.plain_sites`` (``python -m standins.plain_sites <kind>``) as
supervised local services: ``PlainSite("werkstatt")``, ``PlainSite("sayings")``, and the
onboarding corpus (``PlainSite("bookshop")``, ... ``standins.plain_sites.corpus.CORPUS``).
``site.truth()`` is what the site's generator rendered, by the platform's item fields."""

from __future__ import annotations

from pathlib import Path

from harness.base import LocalSite
from standins.plain_sites.corpus import build
from standins.plain_sites.site import Truth


class PlainSite(LocalSite):
    module = "standins.plain_sites"

    def __init__(
        self,
        kind: str,
        *,
        seed: int = 11,
        items: int = 120,
        port: int | None = None,
        run_dir: Path | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(seed=seed, port=port, run_dir=run_dir, name=name or f"plain-site-{kind}")
        self.kind = kind
        self.items = items

    def site_arguments(self) -> list[str]:
        return [self.kind, "--items", str(self.items)]

    def truth(self) -> Truth:
        return build(self.kind, self.seed, self.items).truth
