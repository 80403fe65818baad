"""The gate's first stage: a site's sample pages, fetched through the platform's normal fetch
stack.

- ``fetch``: ``fetch_sample`` runs the site's own spider in a Scrapy subprocess
  (``python -m fingerprints.sampling.fetch``) and hands back ``Page``s; nothing is stored.
"""
