"""Crawls beside the platform's jobs: the structure gate's sample (fingerprints.sampling.fetch)
and the scaffold's (crawlers.scaffold.sample). They fetch through the platform's own
stack (block detection, retries, proxies, rendering), never through its shared frontier
or into its item store, and take Scrapy settings on their command lines as ``scrapy
crawl -s NAME=VALUE`` does.
"""

from __future__ import annotations

import argparse

from scrapy.settings import Settings, default_settings

__all__ = ["add_settings_option", "isolate"]


def isolate(settings: Settings) -> None:
    """Scrapy's own scheduler and dupefilter, no Redis, no pipelines, no feeds, no telnet
    console: at command-line priority, over whatever the environment or profile says."""
    for name in ("SCHEDULER", "DUPEFILTER_CLASS"):
        settings.set(name, getattr(default_settings, name), priority="cmdline")
    settings.set("REDIS_URL", None, priority="cmdline")
    settings.set("ITEM_PIPELINES", {}, priority="cmdline")
    settings.set("FEEDS", {}, priority="cmdline")
    settings.set("TELNETCONSOLE_ENABLED", False, priority="cmdline")


def _setting(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def add_settings_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``-s/--set NAME=VALUE`` (repeatable) into ``settings``: a list of (name, value)."""
    parser.add_argument(
        "-s",
        "--set",
        dest="settings",
        type=_setting,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=help_text,
    )
