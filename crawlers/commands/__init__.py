"""The platform's Scrapy commands (``COMMANDS_MODULE = "crawlers.commands"``) and the check
its operator commands share: a site named on a command line must be one of the project's.

An unknown site is an operator's mistake: one line naming the known sites and where they
are declared, exit status 2, nothing started (``core.config.OperatorError``).
"""

from __future__ import annotations

from scrapy.spiderloader import SpiderLoaderProtocol

from core.config import OperatorError
from crawlers.profiles import PROFILES_DIR, shown_path


def check_site(loader: SpiderLoaderProtocol, site: str) -> None:
    """Raise OperatorError unless ``site`` names one of the project's spiders."""
    known = sorted(loader.list())
    if site not in known:
        raise OperatorError(
            f"unknown site {site!r}: known sites are {', '.join(known)}; "
            f"see {shown_path(PROFILES_DIR)}/"
        )
