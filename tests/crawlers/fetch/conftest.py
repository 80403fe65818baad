"""Demo shops, loopback proxies and capturing sites for the fetch tests, each on a free
loopback port."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from harness.demo_site import DemoSite
from harness.loopback_proxy import LoopbackProxy
from tests.crawlers.fetch.capture import CaptureServer, self_signed_tls
from tests.crawlers.fetch.chromium import respond


@pytest.fixture
def services(tmp_path: Path) -> Iterator[ExitStack]:
    """Everything a test starts is stopped (by PID) when it ends."""
    with ExitStack() as stack:
        yield stack


@pytest.fixture
def start_site(services: ExitStack, tmp_path: Path) -> Callable[..., DemoSite]:
    def start(products: int = 60) -> DemoSite:
        return services.enter_context(DemoSite(products=products, run_dir=tmp_path / "run"))

    return start


@pytest.fixture
def start_proxy(services: ExitStack, tmp_path: Path) -> Callable[..., LoopbackProxy]:
    def start(client: str, **kwargs: Any) -> LoopbackProxy:
        proxy = LoopbackProxy(client=client, run_dir=tmp_path / "run", **kwargs)
        return services.enter_context(proxy)

    return start


@pytest.fixture
def sites() -> Iterator[tuple[CaptureServer, CaptureServer]]:
    with CaptureServer(respond) as site, CaptureServer(respond) as other:
        yield site, other


@pytest.fixture
def tls_site(tmp_path: Path) -> Iterator[CaptureServer]:
    with CaptureServer(tls=self_signed_tls(tmp_path)) as site:
        yield site
