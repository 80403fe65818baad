"""``python -m fingerprints ...``: see ``fingerprints.cli``."""

import sys

from fingerprints.cli import main

sys.exit(main())
