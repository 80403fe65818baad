"""``python -m crawlers.scaffold <site> <url>``: a new site's profile, fixtures and
baseline from a sample of its pages (docs/sites.md, "Adding a site")."""
