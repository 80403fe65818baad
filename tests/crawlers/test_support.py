"""The crawl-test helpers' own guarantees (tests/crawlers/support.py)."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from tests.crawlers.support import stop_leftover_workers, tracked, wait_all


def test_processes_a_test_leaves_running_are_killed_after_it_frozen_ones_too() -> None:
    done = tracked(subprocess.Popen(["true"]))
    done.wait(timeout=10)
    running = tracked(subprocess.Popen(["sleep", "60"]))
    frozen = tracked(subprocess.Popen(["sleep", "60"]))
    frozen.send_signal(signal.SIGSTOP)
    assert sorted(stop_leftover_workers()) == sorted([running.pid, frozen.pid])
    assert running.returncode == frozen.returncode == -signal.SIGKILL
    assert stop_leftover_workers() == []  # forgotten once stopped


def test_workers_not_done_in_time_are_killed_and_named_with_their_log(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    log.write_text("first line\nthe last thing it said\n")
    done = tracked(subprocess.Popen(["true"]))
    # The argv names the log as a crawl does (-s LOG_FILE=...); sh ignores it ($0).
    stuck = tracked(subprocess.Popen(["sh", "-c", "exec sleep 60", f"LOG_FILE={log}"]))
    with pytest.raises(AssertionError, match=f"worker {stuck.pid} still running") as raised:
        wait_all([done, stuck], timeout=0.5)
    assert "the last thing it said" in str(raised.value)
    assert stuck.wait(timeout=10) == -signal.SIGKILL
