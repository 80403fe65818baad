"""``bench.results``: which modules are benchmarks, and the page it writes: a run's section
(its date, command, exit status, machine, load and what it printed) replaces that
benchmark's section only; the others stay as they were. Its smoke run (tests/bench/
test_smoke.py) runs a benchmark through it for real."""

from __future__ import annotations

import datetime as dt
import textwrap
from pathlib import Path

import pytest

from bench.results import (
    HEADER,
    Run,
    benchmarks,
    commands,
    machine,
    parse_extra,
    sections,
    write,
)


def a_run(name: str, output: str, status: int = 0) -> Run:
    return Run(
        name=name,
        argv=("--rounds", "2"),
        started=dt.datetime(2026, 12, 7, 4, 30, tzinfo=dt.UTC),
        seconds=61.4,
        status=status,
        load_start=1.25,
        load_end=3.5,
        output=output,
    )


def test_commands_are_modules_with_a_main_run_under_main(tmp_path: Path) -> None:
    sources = {
        "tool": "def main():\n    pass\n\nif __name__ == '__main__':\n    main()\n",
        "helper": "def main():\n    pass\n",  # no __main__ guard: a helper, not a command
        "other": "if __name__ == '__main__':\n    print()\n",  # no main
    }
    for name, source in sources.items():
        (tmp_path / f"{name}.py").write_text(source)
    assert commands(tmp_path) == {"tool"}
    assert {"frontier", "embedding", "search", "crawlee_demo", "results"} <= commands()
    assert "results" not in benchmarks() and "crawlee_demo" not in benchmarks()
    assert "search" in benchmarks()


def test_a_section_says_when_how_and_on_what_it_was_measured() -> None:
    section = a_run("search", "mode  p50\nhybrid  42.0\n", status=1).section()
    assert section.startswith("## bench.search\n")
    assert "`python -m bench.search --rounds 2`: 2026-12-07 04:30 UTC, 61 s, exit status 1;" in (
        section
    )
    assert machine() in section and "load average 1.2 at start, 3.5 at end" in section
    assert "```\nmode  p50\nhybrid  42.0\n```" in section


def test_writing_replaces_the_runs_sections_and_keeps_the_others(tmp_path: Path) -> None:
    page = tmp_path / "benchmarks.md"
    write(page, [a_run("search", "first search table\n"), a_run("blocks", "blocks table\n")])
    assert page.read_text().startswith(HEADER)
    write(page, [a_run("search", "second search table\n"), a_run("access", "access table\n")])
    found = sections(page.read_text())
    assert list(found) == ["access", "blocks", "search"]  # in name order
    assert "blocks table" in found["blocks"]
    assert "second search table" in found["search"] and "first" not in found["search"]
    text = page.read_text()
    assert text.count("## bench.search") == 1 and text.count(HEADER) == 1


def test_a_section_written_by_hand_between_the_markers_is_kept(tmp_path: Path) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text(
        HEADER
        + textwrap.dedent(
            """
            <!-- bench.results: rendering -->
            ## bench.rendering

            Carried over from an earlier page.
            <!-- /bench.results: rendering -->
            """
        )
    )
    write(page, [a_run("search", "table\n")])
    found = sections(page.read_text())
    assert "Carried over from an earlier page." in found["rendering"]
    assert set(found) == {"rendering", "search"}


def test_a_benchmarks_own_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_extra(["search=--rounds 3 --languages en es"], ["search"]) == {
        "search": ["--rounds", "3", "--languages", "en", "es"]
    }
    for bad in ("search", "frontier=--rounds 2"):
        with pytest.raises(SystemExit, match="NAME=ARGUMENTS"):
            parse_extra([bad], ["search"])
