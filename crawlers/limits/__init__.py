"""Bounds of a crawl: job budgets, depth and URL-shape chains (``budget``), the links of
one page (``links``, read by ``streamed`` for very large pages) and bounded values (item
fields, JSON, log lines: ``bounded``)."""
