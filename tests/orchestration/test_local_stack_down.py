"""``make prefect-down`` (``local_stack down``): it signals only the processes its PID files
still name, removes every PID file, and a Prefect worker stops without a 30 s wait."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config import get_settings
from harness.prefect_server import PrefectServer, PrefectWorker
from harness.proc import recorded_pid
from orchestration import local_stack

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


@pytest.fixture
def platform_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("PLATFORM_RUN_DIR", str(tmp_path))
    get_settings.cache_clear()
    (tmp_path / "stack").mkdir()
    (tmp_path / "jobs" / "demo-1").mkdir(parents=True)
    yield tmp_path
    get_settings.cache_clear()


def sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen(SLEEPER, start_new_session=True)


def test_a_reused_pid_is_left_alone_and_every_pid_file_goes(platform_dir: Path) -> None:
    stale = platform_dir / "jobs" / "demo-1" / "worker-demo-1.pid"
    stale.write_text("0\n")
    os.utime(stale, (time.time() - 3600, time.time() - 3600))  # an old run's file
    stranger = sleeper()  # started after the file was written: the PID is not ours
    stale.write_text(f"{stranger.pid}\n")
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    gone = platform_dir / "jobs" / "demo-1" / "worker-demo-2.pid"
    gone.write_text("999999999\n")
    ours = sleeper()
    time.sleep(0.05)
    (platform_dir / "stack" / "demo-site.pid").write_text(f"{ours.pid}\n")
    try:
        assert recorded_pid(stale) is None
        found = recorded_pid(platform_dir / "stack" / "demo-site.pid")
        assert found is not None and found.pid == ours.pid
        local_stack.down()
        assert ours.wait(timeout=10) is not None
        assert stranger.poll() is None  # never signalled
        assert not list(platform_dir.rglob("*.pid"))
    finally:
        for process in (stranger, ours):
            process.kill()
            process.wait()


def test_the_prefect_worker_stops_promptly(
    platform_dir: Path, prefect_server: PrefectServer
) -> None:
    worker = PrefectWorker(prefect_server, pool="down-probe", run_dir=platform_dir / "stack")
    worker.start()
    try:
        started = time.monotonic()
        local_stack.down()
        took = time.monotonic() - started
        assert worker.process is not None
        assert worker.process.wait(timeout=5) is not None
        assert took < 15, f"prefect-down took {took:.1f}s"
        assert not list(platform_dir.rglob("*.pid"))
    finally:
        worker.stop()
