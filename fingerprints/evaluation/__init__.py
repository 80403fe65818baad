"""The gate run offline on stored pages; the evaluation set's data lives beside the code.

- ``cases``: the evaluation set (``cases.toml``, pages under ``pages/``): each page with the
  verdict the gate must give (``python -m bench.gate`` runs it);
- ``fixture_coverage``: ``coverage.json`` derived from the items the site's callbacks give
  on its fixture pages.
"""
