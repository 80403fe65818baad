"""The jobs board (``python -m job_board_site``) as a supervised local service.

Besides start/stop, it reads and clears the board's access log (``/__control/access-log``)
with stdlib HTTP calls, so tests need no HTTP client of their own.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from harness.base import LocalSite
from job_board_site.board import Board, build_board


class JobBoardSite(LocalSite):
    name = "job-board-site"
    start_timeout = 30.0
    stop_timeout = 10.0

    def __init__(
        self,
        *,
        seed: int = 7,
        jobs: int = 300,
        access_log: Path | None = None,
        port: int | None = None,
        run_dir: Path | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(port=port, run_dir=run_dir)
        if name is not None:
            self.name = name  # several sites in one run dir need their own log/PID files
        self.seed = seed
        self.jobs = jobs
        self.access_log_path = access_log

    def command(self) -> Sequence[str]:
        argv = [
            sys.executable,
            "-m",
            "job_board_site",
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--seed",
            str(self.seed),
            "--jobs",
            str(self.jobs),
        ]
        if self.access_log_path is not None:
            argv += ["--access-log", str(self.access_log_path)]
        return argv

    def board(self) -> Board:
        """The generator's data for what this site serves."""
        return build_board(self.seed, self.jobs)
