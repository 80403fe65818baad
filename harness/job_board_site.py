"""The jobs board (``python -m standins.job_board_site``) as a supervised local service.

Besides start/stop, it reads and clears the board's access log (``/__control/access-log``)
with stdlib HTTP calls, so tests need no HTTP client of their own.
"""

from __future__ import annotations

from pathlib import Path

from harness.base import LocalSite
from standins.job_board_site.board import Board, build_board


class JobBoardSite(LocalSite):
    name = "job-board-site"
    module = "standins.job_board_site"

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
        super().__init__(seed=seed, access_log=access_log, port=port, run_dir=run_dir, name=name)
        self.jobs = jobs

    def site_arguments(self) -> list[str]:
        return ["--jobs", str(self.jobs)]

    def board(self) -> Board:
        """The generator's data for what this site serves."""
        return build_board(self.seed, self.jobs)
