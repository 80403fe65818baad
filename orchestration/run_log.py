"""A run that fails the way the platform means it to ends its log on clear lines, with no
traceback.

A flow that fails by returning a named Failed state (``FailedClosed``, ``Incomplete``,
``NothingStored``, ...) has said what happened: Prefect logs "Finished in state
FailedClosed('structure gate: ...', type=FAILED)". Prefect's engine then reads the run's
result once more, which raises ``FailedRun`` for such a state, and logs it on the run's
logger as "Engine execution exited with unexpected exception" with a traceback, the last
lines of every such run. A step that fails with a ``StepError`` (the gate's
``StructureGateFailed``, a preflight's ``PreflightError``: an error whose message says
what an operator does) is logged by Prefect with Prefect's own traceback, twice.

``OperatorFailures``, on Prefect's flow-run and task-run loggers:

- drops a record whose exception is a ``FailedRun`` (no code failed: the state said it);
- keeps a record whose exception is a ``StepError`` as its one line, without the
  traceback, and drops the engine's "exited with unexpected exception" record of it
  (the run's "Finished in state Failed(...)" line names the error already);
- leaves every other record alone: an exception nobody meant keeps its traceback.
"""

from __future__ import annotations

import logging

from prefect.exceptions import FailedRun

from orchestration.steps import StepError

# Prefect's loggers of flow runs and task runs (its logging.yml).
RUN_LOGGERS = ("prefect.flow_runs", "prefect.task_runs")
# The engine's record of a run whose result raised, after the run's state was logged.
ENGINE_EXIT = "Engine execution exited"


class OperatorFailures(logging.Filter):
    """Failures the platform means: their lines, no tracebacks (module docstring)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, FailedRun):
            return False
        if isinstance(exc, StepError):
            if record.getMessage().startswith(ENGINE_EXIT):
                return False
            record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True


def install() -> None:
    """Filter the run loggers of this process (once each)."""
    for name in RUN_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(existing, OperatorFailures) for existing in logger.filters):
            logger.addFilter(OperatorFailures())
