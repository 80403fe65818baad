"""A job's figures: the workers' counters (``stats``) and the exact ledger its report counts
from (``ledger``, its Lua script in ``lua/``). The crawl writes them through
``crawlers.runtime``; docs/pipelines.md."""
