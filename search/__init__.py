"""Hybrid search over ``chunks-<site>``: BM25 + kNN fused with RRF, a FastAPI app, a CLI.

See docs/indexing-and-search.md.
"""
