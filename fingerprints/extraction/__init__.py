"""Does the data still come out? The site's callbacks on the sample, and their judgement.

- ``callbacks``: the harness that runs the profile's callbacks on sampled pages (no crawl);
- ``evidence``: what a page shows and lacks (absent is not lost);
- ``fields``: did a field's fill rate fall below its baseline (pure);
- ``judgement``: the report on the callbacks' outputs (pure).
"""
