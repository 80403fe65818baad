"""Two local sites without structured data (no JSON-LD, no microdata), stand-ins for the
profile-only path: ``werkstatt``, a German tool shop with variants (prices ``1.234,56 €``,
``1,2K Bewertungen``), and ``sayings``, a quotes board with many quotes per page and
pagination (``Published on Apr 24, 2022``, ``59K likes``). ``python -m standins.plain_sites``."""
