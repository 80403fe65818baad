"""Structural fingerprints, per-site baselines and the fail-closed structure gate.

Entry points for the orchestration flows:

- ``fingerprints.gate.verify_site(site, base_url=...) -> GateResult``: the live gate;
  ``GateResult.verdict`` is ``passed``, ``drifted`` (structure changed, the spider still
  extracts every field: ``passed`` stays True) or ``structure_changed`` (fail closed),
  or why nothing could be judged (``blocked``, ``fetch_failed``, ``no_baseline``, ``error``).
- ``fingerprints.gate.check_all() -> list[GateResult]``: the daily fixture check.
- ``fingerprints.coverage.check_coverage(site, items) -> CoverageReport``: field fill
  rates at job end.

See docs/fingerprints.md.
"""
