"""The spill drain, beside a crawl::

    python -m crawlers.cli.spill drain <site> [--redis-url URL] [--elasticsearch-url URL]
        [--spill-file PATH]

moves a site's spill into ES: its Redis list (with a Redis URL) and its spill file, if
there is one (default ``<STORE_SPILL_DIR or PLATFORM_RUN_DIR/spill>/<site>.jsonl``). It
prints per spill what it drained, what is left and the dead letters, and exits 0 when
nothing is left, 1 otherwise (Elasticsearch still unreachable: one line, nothing
touched). URLs default to the project's ``REDIS_URL`` and ``ELASTICSEARCH_URL`` settings.
A site that is none of the project's and has nothing spilled under its name (a misspelt
name) is one line naming the known sites, exit 2.
A crawl that closes with items in its spill logs this command with its own connections
and spill file.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from elasticsearch import AsyncElasticsearch
from scrapy.settings import BaseSettings
from scrapy.spiderloader import get_spider_loader

from core.config import ConfigurationError, check_elasticsearch_url, check_redis_url, redacted
from core.keys import REDIS_ERRORS, SiteKeys
from core.redis_client import AsyncClient
from core.store import SPILL_ERRORS, FileSpill, ItemStore, StoreSettings, drain_site_spill
from crawlers.addon import project_settings
from crawlers.commands import check_site
from crawlers.pipelines.store import spill_dir
from crawlers.runtime.services import async_redis, elasticsearch


@dataclass
class SpillState:
    """One spill of a site as the drain command found and left it."""

    description: str
    dead_description: str
    file_spill: FileSpill | None = None  # None: the site's Redis list
    left: int = 0
    drained: int = 0
    dead: int = 0
    error: str | None = None  # its backend could not be read or written

    def line(self, site: str) -> str:
        if self.error is not None:
            return f"{site}: {self.description}: not drained ({self.error})"
        return (
            f"{site}: {self.description}: drained {self.drained}, {self.left} left; "
            f"{self.dead} dead letters ({self.dead_description})"
        )


async def drain_spills(
    site: str,
    settings: BaseSettings,
    spill_file: Path,
    *,
    out: Callable[[str], None] = print,
    on_unknown: Callable[[], None] | None = None,
) -> bool:
    """Drain ``site``'s Redis spill (with ``REDIS_URL``) and its spill file (if there is
    one) into Elasticsearch, printing a line per spill; True when nothing is left.

    Elasticsearch unreachable: one line naming what is left, and nothing is touched (an
    attempt would count against the entries' dead-letter budget). ``on_unknown``: called
    (to raise) when nothing at all is spilled under ``site``, a site the caller does not
    know.
    """
    es = elasticsearch(settings)
    store_settings = StoreSettings.from_settings(settings)
    server = async_redis(settings) if settings.get("REDIS_URL") else None
    try:
        states: list[SpillState] = []
        if server is not None:
            states.append(await _redis_state(server, site))
        if spill_file.exists():
            states.append(await _file_state(FileSpill(spill_file)))
        if on_unknown is not None and not any(
            state.left or state.dead or state.file_spill for state in states
        ):
            # Not one of the project's sites and nothing under its name: a misspelt site,
            # which "nothing to drain" would report as success. (A retired site's
            # leftover spill is still drained.)
            on_unknown()
        if not states:
            out(f"{site}: nothing to drain (no REDIS_URL, no spill file {spill_file})")
            return True
        waiting = [state for state in states if state.error is None and state.left]
        if waiting and not await es.ping():
            left = ", ".join(f"{state.left} in {state.description}" for state in waiting)
            url = redacted(str(settings.get("ELASTICSEARCH_URL")))
            out(f"{site}: Elasticsearch unreachable at {url}: nothing drained, {left} left")
            return False
        for state in waiting:
            await _drain(state, es, server, site, store_settings)
        for state in states:
            out(state.line(site))
        return all(state.error is None and state.left == 0 for state in states)
    finally:
        await es.close()
        if server is not None:
            await server.aclose()


async def _redis_state(server: AsyncClient, site: str) -> SpillState:
    keys = SiteKeys(site)
    state = SpillState(f"redis list {keys.store_spill}", keys.store_dead_letters)
    try:
        state.left = int(await server.llen(keys.store_spill))
        state.dead = int(await server.llen(keys.store_dead_letters))
    except REDIS_ERRORS as exc:
        state.error = f"Redis unreachable: {type(exc).__name__}"
    return state


async def _file_state(spill: FileSpill) -> SpillState:
    state = SpillState(spill.description, str(spill.dead_path), spill)
    try:
        state.left, state.dead = await spill.size(), await spill.dead_size()
    except OSError as exc:
        state.error = f"cannot read it: {type(exc).__name__}: {exc}"
    return state


async def _drain(
    state: SpillState,
    es: AsyncElasticsearch,
    server: AsyncClient | None,
    site: str,
    settings: StoreSettings,
) -> None:
    spill = state.file_spill
    try:
        if spill is not None:
            state.drained = await ItemStore(es, spill, settings=settings).drain_spill()
            state.left, state.dead = await spill.size(), await spill.dead_size()
        elif server is not None:
            state.drained, state.left = await drain_site_spill(es, server, site, settings=settings)
            state.dead = int(await server.llen(SiteKeys(site).store_dead_letters))
    except SPILL_ERRORS as exc:
        state.error = f"spill unavailable: {type(exc).__name__}: {exc}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m crawlers.cli.spill",
        description="Drain a site's store spill (its Redis list with REDIS_URL, and its "
        "spill file if there is one) into Elasticsearch. Exit 0 when nothing is left, "
        "1 otherwise.",
    )
    parser.add_argument("command", choices=["drain"])
    parser.add_argument("site")
    parser.add_argument("--redis-url", help="default: the project's REDIS_URL setting")
    parser.add_argument(
        "--elasticsearch-url", help="default: the project's ELASTICSEARCH_URL setting"
    )
    parser.add_argument(
        "--spill-file",
        type=Path,
        help="default: <STORE_SPILL_DIR, else PLATFORM_RUN_DIR/spill>/<site>.jsonl",
    )
    args = parser.parse_args(argv)
    settings = project_settings()
    if args.redis_url:
        settings.set("REDIS_URL", args.redis_url, priority="cmdline")
    if args.elasticsearch_url:
        settings.set("ELASTICSEARCH_URL", args.elasticsearch_url, priority="cmdline")
    check_redis_url(settings.get("REDIS_URL"))
    check_elasticsearch_url(settings.get("ELASTICSEARCH_URL"))
    if not settings.get("ELASTICSEARCH_URL"):
        raise ConfigurationError(
            "ELASTICSEARCH_URL is not set: pass --elasticsearch-url http://HOST:9200 or set it"
        )
    spill_file = args.spill_file or spill_dir(settings) / f"{args.site}.jsonl"
    loader = get_spider_loader(settings)
    known = args.site in loader.list()

    def unknown() -> None:
        check_site(loader, args.site)  # raises OperatorError naming the known sites

    drained = asyncio.run(
        drain_spills(args.site, settings, spill_file, on_unknown=None if known else unknown)
    )
    return 0 if drained else 1


if __name__ == "__main__":
    raise SystemExit(main())
