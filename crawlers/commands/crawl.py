"""``scrapy crawl <site>``: Scrapy's own command, with an unknown site as one line.

Scrapy answers ``scrapy crawl nosuchsite`` with a KeyError traceback from its spider
loader once the crawler process is up (reactor installed, logging configured). Here the
name is checked while the options are processed, before any of that: one line naming the
known sites, exit status 2. Everything else (``-a``, ``-s``, ``-o``, ``-O``, the exit
status of a crawl) is Scrapy's.
"""

from __future__ import annotations

import argparse

from scrapy.commands import crawl
from scrapy.spiderloader import get_spider_loader

from crawlers.commands import check_site


class Command(crawl.Command):
    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        if len(args) == 1:  # none or several: Scrapy's own usage errors, from run()
            assert self.settings is not None
            check_site(get_spider_loader(self.settings), args[0])
