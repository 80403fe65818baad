"""Hybrid search over ``chunks-<site>``: BM25 + kNN fused with RRF, a FastAPI app, a CLI.

See docs/llm-and-search.md.
"""
