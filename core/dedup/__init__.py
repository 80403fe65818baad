"""Change detection: new, changed or unchanged since the last crawl (``detector``, its Lua
scripts in ``lua/``). The pipeline step is ``crawlers.pipelines.dedup``; docs/pipelines.md."""
