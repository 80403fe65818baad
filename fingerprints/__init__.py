"""Structural fingerprints, per-site baselines and the fail-closed structure gate.

Entry points for the orchestration flows:

- ``fingerprints.gate.verify_site(site, base_url=...) -> GateResult``: the live gate.
- ``fingerprints.gate.check_all() -> list[GateResult]``: the daily fixture check.
- ``fingerprints.coverage.check_coverage(site, items) -> CoverageReport``: field fill
  rates at job end.

See docs/fingerprints.md.
"""
