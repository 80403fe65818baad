"""An operator's mistake, named with its fix: one line on stderr, exit status 2."""

from __future__ import annotations

import sys

# The exit status of an operator's mistake, as argparse's usage errors have it.
EXIT_USAGE = 2


class OperatorError(SystemExit):
    """An operator's mistake (an argument, a setting, a service a command needs), named
    with its fix: uncaught, it ends the process with that one line on stderr and exit
    status 2, never a traceback.

    A ``SystemExit`` on purpose: it ends any process that way wherever it is raised
    (importing the settings, a Scrapy add-on, a CLI), without every entry point catching
    it. Python prints a ``SystemExit`` whose ``code`` is no number and exits 1, so ``code``
    is a property: Python reads it once, as the exception ends the process, and that read
    writes the line and answers 2. A caller that can recover catches it by this name (and
    reads ``message``); nothing is printed then. ``reported=True``: the line was logged
    already (a crawl's log), the process only exits 2.
    """

    def __init__(self, message: str, *, reported: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self._reported = reported

    @property
    def code(self) -> int:  # type: ignore[override]  # read-only on purpose: see the docstring
        if not self._reported:
            self._reported = True
            sys.stderr.write(f"{self.message}\n")
            sys.stderr.flush()
        return EXIT_USAGE


class ConfigurationError(OperatorError):
    """A malformed setting or environment variable, named with its fix."""

    def __init__(self, message: str) -> None:
        super().__init__(f"configuration error: {message}")
