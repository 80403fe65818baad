"""``harness.base``'s supervision: a process is stopped one signal after another, a grace
period apart, and only while it still is the process that was started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from harness.base import SupervisedProcess, signal_groups, stop_recorded
from harness.proc import process_info

# Ignores SIGINT and SIGTERM: only SIGKILL ends it.
STUBBORN = (
    "import signal, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "print('up', flush=True)\n"
    "time.sleep(120)\n"
)


class Stubborn(SupervisedProcess):
    name = "stubborn"
    stop_timeout = 0.5

    def command(self) -> Sequence[str]:
        return [sys.executable, "-c", STUBBORN]

    def ready(self) -> bool:
        return "up" in self.log_tail()


def test_a_process_ignoring_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    process = Stubborn(run_dir=tmp_path).start()
    assert process.pid_path.read_text().strip() == str(process.pid)
    started = time.monotonic()
    assert process.stop() == -signal.SIGKILL
    assert 0.5 <= time.monotonic() - started < 5
    assert not process.pid_path.exists() and not process.alive()


def test_stop_recorded_escalates_and_leaves_a_reused_pid_alone(tmp_path: Path) -> None:
    recorded = Stubborn(run_dir=tmp_path).start()  # as `up` leaves it: a PID file
    stale = tmp_path / "stale.pid"
    stranger = subprocess.Popen(
        [sys.executable, "-c", STUBBORN], start_new_session=True, stdout=subprocess.PIPE
    )
    assert stranger.stdout is not None and stranger.stdout.readline() == b"up\n"
    stale.write_text(f"{stranger.pid}\n")
    written = time.time() - 3600  # the file predates the process: its PID was reused
    os.utime(stale, (written, written))
    try:
        stopped = stop_recorded(
            [recorded.pid_path, stale], (signal.SIGINT, signal.SIGTERM, signal.SIGKILL), 0.3
        )
        assert [(path, info.pid) for path, info in stopped] == [(recorded.pid_path, recorded.pid)]
        assert recorded.process is not None and recorded.process.wait(5) == -signal.SIGKILL
        assert stranger.poll() is None  # never signalled
        assert not recorded.pid_path.exists() and not stale.exists()
    finally:
        stranger.kill()
        stranger.wait()


def test_signal_groups_signals_only_the_processes_it_found() -> None:
    child = subprocess.Popen([sys.executable, "-c", STUBBORN], start_new_session=True)
    try:
        info = process_info(child.pid)
        assert info is not None and info.session == child.pid
        assert signal_groups([child.pid], (signal.SIGKILL,), 0.3) == []
        assert child.wait(5) == -signal.SIGKILL
        assert signal_groups([child.pid], (signal.SIGKILL,), 0.1) == []  # gone: nothing sent
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
