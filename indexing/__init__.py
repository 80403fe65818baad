"""The llm-process step: a job's new/changed items -> chunks -> embeddings -> ``chunks-<site>``.

See docs/indexing-and-search.md; the entry point is ``indexing.process.process_job``.
"""
