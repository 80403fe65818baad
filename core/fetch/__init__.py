"""The fetch layer's framework-agnostic rules: is a response a block page (``blocks``), does
the site refuse the client as a whole (``refusal``), which page types need a browser
(``render_choice``, its Lua scripts in ``lua/``). The Scrapy side is ``crawlers.fetch``;
docs/fetching.md."""
