"""The truth matrix's access rows: the demo shop behind the bot-defense stand-in
(``harness.bot_defense``, each vendor style it has), crawled with the fetch
configurations docs/fetching.md recommends (sessions; sessions + ``RENDER_MODE=auto``),
one worker or two with one SIGKILLed mid-job."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.outcome_runs import Services, crawl, kill_first_when
from bench.outcome_verdicts import Check, Outcome, judged
from harness.bot_defense import BotDefense

# The fetch configurations of docs/fetching.md, as bench.access runs them (a session
# budget below the stand-in's rate).
SESSIONS: dict[str, object] = {
    "FETCH_IDENTITY": "browser",
    "SESSIONS_ENABLED": True,
    "SESSION_POOL_SIZE": 4,
    "SESSION_MAX_RATE": 3.8,
    "SESSION_MAX_USES": 0,
    "RECRAWL_CARD_SKIP": False,
}
AUTO: dict[str, object] = {**SESSIONS, "RENDER_MODE": "auto"}
DEFENSE_RATE, DEFENSE_WINDOW = 40, 10.0


def has_style() -> bool:
    return "style" in inspect.signature(BotDefense.__init__).parameters


def defended(style: str, configuration: dict[str, object], *, level: int = 3, workers: int = 1,
             kill: bool = False) -> Callable[[Services, Path], Outcome]:  # fmt: skip
    """The shop behind the bot-defense stand-in (``style``'s challenge), crawled with
    ``configuration``: every product stored, the challenges the report counts passed are
    the sessions the stand-in verified."""

    def scenario(services: Services, run_dir: Path) -> Outcome:
        options: dict[str, Any] = {}
        if has_style():
            options["style"] = style
        elif style != "cloudflare":
            return Outcome(
                "finished/0",
                "(not run)",
                0,
                0,
                [Check("stand-in style", "missing", style)],
                note=f"harness.bot_defense has no {style!r} style on this branch",
            )
        defense = BotDefense(
            upstream=services.site.url,
            level=level,
            run_dir=run_dir / "defense",
            session_rate=DEFENSE_RATE,
            rate_window=DEFENSE_WINDOW,
            **options,
        )
        with defense:
            during = kill_first_when(services, "demo", services.products // 3) if kill else None
            run = crawl(
                services,
                run_dir,
                base_url=defense.url,
                settings=configuration,
                workers=workers,
                during=during,
                budget=240,
            )
            records = defense.log_records()
        verified = sum(1 for r in records if r.get("decision") == "verified")
        passed = int(run.report.get("challenges_passed") or 0)
        return judged(
            run,
            "finished/0",
            services.products,
            extra=(
                Check("served", run.served, services.products),
                Check("report challenges passed = stand-in verified", passed, verified),
            ),
        )

    return scenario
