"""orchestration.run_log: the engine's traceback of a returned Failed state is dropped, a
step's operator error keeps its line without a traceback, any other record (an exception
nobody meant, with its traceback) is kept as it is."""

from __future__ import annotations

import logging
import sys

from prefect.exceptions import FailedRun

from orchestration.run_log import RUN_LOGGERS, OperatorFailures, install
from orchestration.scrape_tasks import StructureGateFailed
from orchestration.steps import PreflightError

ENGINE_EXIT = "Engine execution exited with unexpected exception"


def record(exc: BaseException | None, message: str) -> logging.LogRecord:
    info = None
    if exc is not None:
        try:
            raise exc
        except BaseException:
            info = sys.exc_info()
    return logging.LogRecord(RUN_LOGGERS[0], logging.ERROR, __file__, 1, message, (), info)


def test_a_returned_failed_state_leaves_no_engine_traceback() -> None:
    keep = OperatorFailures().filter
    assert not keep(record(FailedRun("structure gate: structure changed"), ENGINE_EXIT))
    assert keep(record(None, "Finished in state FailedClosed('structure gate: ...')"))


def test_a_step_error_is_its_line_without_a_traceback() -> None:
    keep = OperatorFailures().filter
    gate = StructureGateFailed({"reason": "structure changed: home (similarity 0.01 < 0.85)"})
    failed = record(gate, f"Task run failed with exception: {gate!r} - Retries are exhausted")
    assert keep(failed)
    assert failed.exc_info is None and failed.exc_text is None
    formatted = logging.Formatter().format(failed)
    assert "Traceback" not in formatted and "structure changed: home" in formatted
    # The engine's record of the run that step failed: its state line says it already.
    assert not keep(record(PreflightError("preflight failed for demo: Redis down"), ENGINE_EXIT))


def test_an_exception_nobody_meant_keeps_its_traceback() -> None:
    keep = OperatorFailures().filter
    bug = record(RuntimeError("the flow itself broke"), ENGINE_EXIT)
    assert keep(bug)
    assert "Traceback" in logging.Formatter().format(bug)


def test_installed_once_on_each_run_logger() -> None:
    loggers = [logging.getLogger(name) for name in RUN_LOGGERS]
    before = [list(logger.filters) for logger in loggers]
    try:
        install()
        install()
        for logger in loggers:
            assert len([f for f in logger.filters if isinstance(f, OperatorFailures)]) == 1
            # The logger's own filters: applied before any handler, the API's too.
            assert not logger.filter(record(FailedRun("closed"), ENGINE_EXIT))
            assert logger.filter(record(None, "Finished in state FailedClosed('closed')"))
    finally:
        for logger, filters in zip(loggers, before, strict=True):
            logger.filters[:] = filters
