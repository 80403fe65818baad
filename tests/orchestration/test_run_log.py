"""orchestration.run_log: the engine's traceback of a returned Failed state is dropped, any
other record (a raised exception's traceback included) is kept."""

from __future__ import annotations

import logging
import sys

from prefect.exceptions import FailedRun

from orchestration.run_log import FLOW_RUN_LOGGER, ReturnedFailure, install


def record(exc: BaseException | None, message: str) -> logging.LogRecord:
    info = None
    if exc is not None:
        try:
            raise exc
        except BaseException:
            info = sys.exc_info()
    return logging.LogRecord(FLOW_RUN_LOGGER, logging.ERROR, __file__, 1, message, (), info)


def test_only_the_failed_run_of_a_returned_state_is_dropped() -> None:
    keep = ReturnedFailure().filter
    returned = FailedRun("structure gate: structure changed")
    assert not keep(record(returned, "Engine execution exited with unexpected exception"))
    assert keep(record(RuntimeError("the flow itself broke"), "Encountered exception"))
    assert keep(record(None, "Finished in state FailedClosed('structure gate: ...')"))


def test_installed_once_on_the_flow_run_logger() -> None:
    logger = logging.getLogger(FLOW_RUN_LOGGER)
    before = list(logger.filters)
    try:
        install()
        install()
        assert len([f for f in logger.filters if isinstance(f, ReturnedFailure)]) == 1
        # The logger's own filters (what it applies before any handler, the API's too).
        returned = record(FailedRun("closed"), "Engine execution exited with unexpected exception")
        assert not logger.filter(returned)
        assert logger.filter(record(None, "Finished in state FailedClosed('closed', type=FAILED)"))
    finally:
        logger.filters[:] = before
