"""How a job ended and what is kept of it: its close reason (``outcome``) and its document in
the jobs index (``index``)."""
