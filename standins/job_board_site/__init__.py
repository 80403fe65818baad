"""The jobs board: a deterministic set of job postings served over HTTP.

A second local stand-in for a third-party site, built unlike the demo shop (JobPosting
JSON-LD, facts only the HTML carries, a sitemap index), so onboarding a site with a
profile only is tested on two differently built sites; ``python -m standins.job_board_site --help``.
"""
