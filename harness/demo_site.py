"""The demo store (``python -m standins.demo_site``) as a supervised local service.

Besides start/stop, it wraps the site's control API (see ``standins.demo_site.server``) with
stdlib HTTP calls, so tests and benchmarks need no HTTP client of their own.
"""

from __future__ import annotations

import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.base import LocalSite
from standins.demo_site.catalog import Catalog, build_catalog


class DemoSite(LocalSite):
    name = "demo-site"
    module = "standins.demo_site"

    def __init__(
        self,
        *,
        seed: int = 7,
        products: int = 1200,
        revision: int = 0,
        layout: str = "v1",
        access_log: Path | None = None,
        port: int | None = None,
        run_dir: Path | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(seed=seed, access_log=access_log, port=port, run_dir=run_dir, name=name)
        self.products = products
        self.revision = revision
        self.layout = layout

    def site_arguments(self) -> list[str]:
        return [
            "--products",
            str(self.products),
            "--revision",
            str(self.revision),
            "--layout",
            self.layout,
        ]

    # -- control API ------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The site's control state (``GET /__control``)."""
        result: dict[str, Any] = self._call("GET", "/__control")
        return result

    def control(
        self,
        *,
        client: str | None = None,
        layout: str | None = None,
        revision: int | None = None,
        block_seed: int | None = None,
        log_headers: bool | None = None,
        **behaviours: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        """Set behaviours (``captcha={"rate": 0.3}``; ``None`` removes one) and/or state.

        With ``client``, the behaviours apply only to requests carrying
        ``X-Demo-Client: <client>``. ``log_headers=True``: the access log keeps every
        request's headers (until ``reset``). Returns the new state.
        """
        payload: dict[str, Any] = {}
        if log_headers is not None:
            payload["log_headers"] = log_headers
        if layout is not None:
            payload["layout"] = layout
        if revision is not None:
            payload["revision"] = revision
        if block_seed is not None:
            payload["block_seed"] = block_seed
        if behaviours:
            if client is None:
                payload["behaviours"] = behaviours
            else:
                payload["clients"] = {client: behaviours}
        result: dict[str, Any] = self._call("POST", "/__control", payload)
        return result

    def reset(self) -> dict[str, Any]:
        """Behaviours, counters and the access log cleared; layout/revision as started."""
        result: dict[str, Any] = self._call("POST", "/__control/reset", {})
        return result

    def access_log(self, since: int = 0, client: str | None = None) -> list[dict[str, Any]]:
        """Requests served since index ``since`` (optionally one client's only)."""
        query = f"?since={since}" + (f"&client={urllib.parse.quote(client)}" if client else "")
        result: list[dict[str, Any]] = self._call("GET", "/__control/access-log" + query)
        return result

    def catalog(self) -> Catalog:
        """The generator's data for what this site serves (at its start revision)."""
        return build_catalog(self.seed, self.products, self.revision)
