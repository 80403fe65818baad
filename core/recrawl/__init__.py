"""Re-crawls: listing cards that stand for their items (``cards``), the layout a record was
made under (``layouts``), removed items (``removals``), change history (``history``);
their Lua scripts in ``lua/``. The Scrapy side is ``crawlers.recrawl``; docs/recrawl.md."""
