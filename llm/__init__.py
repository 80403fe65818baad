"""The llm-process step: a job's new/changed items -> chunks -> embeddings -> ``chunks-<site>``.

See docs/llm-and-search.md; the entry point is ``llm.process.process_job``.
"""
