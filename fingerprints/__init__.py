"""Structural fingerprints, per-site baselines and the fail-closed structure gate.

Entry points for the orchestration flows:

- ``fingerprints.gate.verify_site(site, base_url=...) -> GateResult``: the live gate,
  which judges the sample's items on every run; ``GateResult.verdict`` is ``passed``,
  ``drifted`` (the structure changed or an optional field fell, the data still comes out:
  ``passed`` stays True), ``extraction_broken`` (a required field fell below the floor of
  its baseline: fail closed) or ``structure_changed`` (fail closed), or why nothing could
  be judged (``blocked``, ``fetch_failed``, ``no_baseline``, ``error``).
- ``fingerprints.gate.check_all() -> list[GateResult]``: the daily fixture check.
- ``fingerprints.baselines.coverage.check_coverage(site, items) -> CoverageReport``: field fill
  rates at job end.

See docs/fingerprints.md.
"""
