"""Repair suggestions for the fields a site's extraction lost, validated before anyone sees
them.

- ``suggestions``: ``suggest_repairs`` asks a chat model for replacement rules and keeps the
  ones that give a valid value on every sample page;
- ``skeleton``: a page reduced to its DOM skeleton, what the model reads;
- ``rules``: a suggested rule (CSS, XPath, JSON path) run on a page;
- ``report``: the rules kept and discarded, as a markdown table and a Slack block.
"""
