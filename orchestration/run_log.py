"""A run that returns a Failed state ends its log on the state's own line, no traceback.

A flow that fails by returning a named Failed state (``FailedClosed``, ``Incomplete``,
``NothingStored``, ...) has said what happened: Prefect logs "Finished in state
FailedClosed('structure gate: ...', type=FAILED)". Prefect's engine then reads the run's
result once more, which raises ``FailedRun`` for such a state, and logs it on the run's
logger as "Engine execution exited with unexpected exception" with a traceback, the last
lines of every such run. ``ReturnedFailure`` drops that one record (its exception is a
``FailedRun``: no code failed); an exception a flow or a step raised keeps its traceback.
"""

from __future__ import annotations

import logging

from prefect.exceptions import FailedRun

# Prefect's logger of flow runs (its logging.yml); the engine's exit record goes there.
FLOW_RUN_LOGGER = "prefect.flow_runs"


class ReturnedFailure(logging.Filter):
    """Drops a record whose exception is the ``FailedRun`` of a returned Failed state."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, FailedRun)


def install() -> None:
    """Filter the flow-run logger of this process (once)."""
    logger = logging.getLogger(FLOW_RUN_LOGGER)
    if not any(isinstance(existing, ReturnedFailure) for existing in logger.filters):
        logger.addFilter(ReturnedFailure())
