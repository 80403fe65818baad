"""The structure of a page: its fingerprint and its similarity to a page type's baseline.

- ``fingerprint``: a page's structural fingerprint (DOM skeleton shingles, selector counts,
  schema.org types, embedded state keys), robust to content;
- ``comparison``: a page type's baseline (token frequencies over its fixtures) and a page's
  weighted similarity to it.
"""
