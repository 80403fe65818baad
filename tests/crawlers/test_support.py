"""The crawl-test helpers' own guarantees (tests/crawlers/support.py)."""

from __future__ import annotations

import signal
import subprocess

from tests.crawlers.support import stop_leftover_workers, tracked


def test_processes_a_test_leaves_running_are_killed_after_it_frozen_ones_too() -> None:
    done = tracked(subprocess.Popen(["true"]))
    done.wait(timeout=10)
    running = tracked(subprocess.Popen(["sleep", "60"]))
    frozen = tracked(subprocess.Popen(["sleep", "60"]))
    frozen.send_signal(signal.SIGSTOP)
    assert sorted(stop_leftover_workers()) == sorted([running.pid, frozen.pid])
    assert running.returncode == frozen.returncode == -signal.SIGKILL
    assert stop_leftover_workers() == []  # forgotten once stopped
