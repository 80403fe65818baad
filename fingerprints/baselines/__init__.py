"""What each site is judged against: the reviewable files under ``fingerprints/sites/<site>/``.

- ``store``: ``baseline.json`` computed from the fixtures, the profile's ``[fingerprint]``
  table (``FingerprintConfig``), the sites' directories;
- ``fixtures``: the fixtures scored against their own baseline, fixture files written from
  fetched pages;
- ``coverage``: ``coverage.json``, the field fill-rate baseline, and the job-end check;
- ``proposed``: the baseline a drifted sample proposes, kept for review;
- ``versions``: accepting a proposal, with the replaced baseline archived.
"""
