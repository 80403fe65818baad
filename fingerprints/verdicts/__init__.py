"""The gate's answer: the structure comparison and the extraction judgement made a verdict.

- ``results``: what the gate answers (``GateResult`` per site, page type and page);
- ``decisions``: the pure verdicts (each page against its baseline, the site's result, the
  proposed baseline, the verdict of a structure change judged by its extraction).
"""
