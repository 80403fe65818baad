"""Fetching that survives production sites: Scrapy glue, see docs/fetching.md.

- ``proxies``: scrapy-rotating-proxies, with the site's block classifier as ban policy
- ``classify``: one verdict per response (``core.fetch.blocks``), block-rate stats
- ``retry``: block pages dropped, retries with backoff + jitter through another proxy
- ``identity``: the browser every request presents (the installed Chromium), its headers
- ``impersonate``: plain requests on curl_cffi with that browser's TLS/HTTP2 fingerprint
- ``rendering``: scrapy-playwright with a hard time limit, crash recovery, a context
  per proxy, resource blocking
- ``cache``: an HTTP cache policy that never stores block pages (local debugging)
- ``conditional``: item pages fetched with their last validators, a 304 seen unchanged
- ``redact``: proxy names without credentials
"""
