"""Onboarding a site nobody here has seen: the scaffold's unedited profile, measured.

    .venv/bin/python -m bench.onboarding [--sites a,b] [--items N] [--seed S] [--pages N]
                                         [--keep DIR] [--real-pages DIR] [--smoke]

For each site of ``standins.plain_sites.corpus`` (served by ``harness.plain_site``): the scaffold,
``scrapy crawl`` with the profile as written (local mode), the items against the truth
its generator holds (items found, field accuracy) and the page types found; then the
saved real pages of the production sites (``bench/onboarding_real.py``). Exit status 1
when the bar is missed (``--smoke``: one small site, the bar not judged). The bar and
the columns: docs/sites.md "The onboarding corpus: ``python -m bench.onboarding``".
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import smoke
from bench.onboarding_values import path_of, same
from core.config import ENVIRONMENT, REPO_ROOT
from harness.plain_site import PlainSite
from standins.plain_sites.corpus import CORPUS, build
from standins.plain_sites.site import Truth

MEAN_BAR, SITE_BAR, ITEMS_BAR = 0.95, 0.85, 0.99
REAL_PAGES = REPO_ROOT.parent / "shared" / "real-pages"


@dataclass
class Row:
    site: str
    exit: int
    roles: tuple[int, int] = (0, 0)  # kinds of page found of the site's
    found: int = 0
    expected: int = 0
    accuracy: float = 0.0
    wrong: Counter[str] = field(default_factory=Counter)
    scaffold_s: float = 0.0
    crawl_s: float = 0.0
    item_type: str = ""
    note: str = ""

    @property
    def items_share(self) -> float:
        return self.found / self.expected if self.expected else 0.0


def environment(scratch: Path) -> dict[str, str]:
    """The process environment without the platform's variables, with the scratch
    profile and site directories."""
    import os

    names = {v.name for v in ENVIRONMENT} | {"SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT"}
    env = {k: v for k, v in os.environ.items() if k.upper() not in names}
    env |= {
        "SITE_PROFILES_DIR": str(scratch / "profiles"),
        "FINGERPRINT_SITES_DIR": str(scratch / "sites"),
        "PYTHONPATH": str(REPO_ROOT),
    }
    return env


def scaffold(
    name: str, url: str, scratch: Path, pages: int
) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "crawlers.scaffold", name, url + "/", "--pages", str(pages)],
        cwd=REPO_ROOT, env=environment(scratch), capture_output=True, text=True, timeout=900,
        check=False,
    )  # fmt: skip
    return done, time.monotonic() - started


def crawl(name: str, url: str, scratch: Path) -> tuple[list[dict[str, Any]], float, str]:
    out = scratch / f"{name}.jsonl"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", name, "-a", f"base_url={url}", "-O", str(out),
         "-s", "LOG_LEVEL=WARNING", "-s", "CLOSESPIDER_TIMEOUT=600"],
        cwd=REPO_ROOT, env=environment(scratch), capture_output=True, text=True, timeout=900,
        check=False,
    )  # fmt: skip
    seconds = time.monotonic() - started
    items = (
        [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
        if out.exists()
        else []
    )
    tail = done.stderr.strip().splitlines()[-1:] if done.returncode else []
    return items, seconds, tail[0] if tail else ""


def measure(items: Sequence[Mapping[str, Any]], truth: Truth) -> tuple[int, float, Counter[str]]:
    """(items found, field accuracy over them, wrong values per field)."""
    by_key: dict[str, Mapping[str, Any]] = {}
    for item in items:
        key = path_of(str(item.get("url", ""))) if truth.match == "url" else item.get(truth.match)
        if isinstance(key, str):
            by_key.setdefault(" ".join(key.split()), item)
    right = total = found = 0
    wrong: Counter[str] = Counter()
    for key, expected in truth.items.items():
        item = by_key.get(" ".join(key.split()))
        if item is None:
            continue
        found += 1
        for name, value in expected.items():
            total += 1
            if same(value, item.get(name), name):
                right += 1
            else:
                wrong[name] += 1
    return found, (right / total if total else 0.0), wrong


def roles_found(scratch: Path, name: str, truth: Truth) -> tuple[int, int]:
    """Kinds of page the profile has of those the site has (a listing the home page is
    part of counts as both)."""
    path = scratch / "profiles" / f"{name}.toml"
    if not path.exists():
        return 0, len(truth.roles)
    profile = tomllib.loads(path.read_text())
    text = path.read_text()
    found = set()
    for page_type, table in profile.get("pages", {}).items():
        if "fields" in table:
            found.add("items" if "items" in table else "detail")
        elif page_type == "home":
            found.add("home")
        elif (
            f"# {page_type}: " in text and "listing pages" in text.split(f"# {page_type}: ")[1][:80]
        ):
            found.add("listing")
        else:
            found.add("hub")
        start = profile.get("start_page")
        if start == page_type and page_type != "home":
            found.add("home")
    return len(found & set(truth.roles)), len(truth.roles)


def run_site(kind: str, seed: int, count: int, pages: int, scratch: Path) -> Row:
    truth = build(kind, seed, count).truth
    name = f"ob_{kind}"
    with PlainSite(kind, seed=seed, items=count, run_dir=scratch, name=f"ob-{kind}") as site:
        done, seconds = scaffold(name, site.url, scratch, pages)
        row = Row(kind, done.returncode, scaffold_s=seconds, expected=len(truth.items))
        if done.returncode not in (0, 1):
            row.note = (done.stderr.strip().splitlines() or ["?"])[-1][:160]
            return row
        items, row.crawl_s, row.note = crawl(name, site.url, scratch)
    row.found, row.accuracy, row.wrong = measure(items, truth)
    row.roles = roles_found(scratch, name, truth)
    profile = tomllib.loads((scratch / "profiles" / f"{name}.toml").read_text())
    row.item_type = profile.get("item_type", "")
    return row


def table(rows: Sequence[Row]) -> str:
    wide = max([16, *(len(r.item_type) for r in rows)])  # quote_<site>: a type of its own
    head = (
        f"{'site':<11} {'exit':>4} {'type':<{wide}} {'page kinds':>10} {'items':>11} "
        f"{'accuracy':>8} {'scaffold':>9} {'crawl':>7}  worst fields"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        worst = ", ".join(f"{n} {c}" for n, c in r.wrong.most_common(3)) or r.note or "-"
        lines.append(
            f"{r.site:<11} {r.exit:>4} {r.item_type:<{wide}} {r.roles[0]:>5}/{r.roles[1]:<4} "
            f"{r.found:>5}/{r.expected:<5} {r.accuracy:>8.1%} {r.scaffold_s:>8.1f}s "
            f"{r.crawl_s:>6.1f}s  {worst}"
        )
    return "\n".join(lines)


def verdict(rows: Sequence[Row]) -> tuple[bool, str]:
    accuracies = [r.accuracy for r in rows]
    mean = statistics.mean(accuracies) if accuracies else 0.0
    lowest = min(rows, key=lambda r: r.accuracy) if rows else None
    found = sum(r.found for r in rows)
    expected = sum(r.expected for r in rows)
    share = found / expected if expected else 0.0
    ok = mean >= MEAN_BAR and lowest is not None and lowest.accuracy >= SITE_BAR
    ok = ok and share >= ITEMS_BAR and all(r.exit == 0 for r in rows)
    text = (
        f"mean unedited field accuracy {mean:.1%} (bar {MEAN_BAR:.0%}), lowest "
        f"{lowest.accuracy if lowest else 0:.1%} ({lowest.site if lowest else '-'}; bar "
        f"{SITE_BAR:.0%}), items found {found}/{expected} = {share:.1%} (bar {ITEMS_BAR:.0%}), "
        f"scaffold exit 0 on {sum(r.exit == 0 for r in rows)}/{len(rows)}: "
        + ("MET" if ok else "NOT MET")
    )
    return ok, text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.onboarding", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--sites", default=",".join(CORPUS), help="comma-separated (default: all)")
    parser.add_argument("--items", type=int, default=120, help="items per site")
    parser.add_argument("--seed", type=int, default=20260301, help="the sites' generator seed")
    parser.add_argument("--pages", type=int, default=60, help="the scaffold's sample")
    parser.add_argument("--keep", type=Path, help="keep profiles, fixtures and items here")
    parser.add_argument(
        "--real-pages",
        type=Path,
        default=REAL_PAGES,
        help=f"the saved real pages of the production sites (default {REAL_PAGES}; "
        "absent: left out, said so)",
    )
    args = smoke.parse_args(parser, argv, sites="quotebook", items=24, pages=20)
    # Stopped (SIGTERM), the sites it serves and the command it runs stop with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    kinds = [k for k in args.sites.split(",") if k]
    unknown = sorted(set(kinds) - set(CORPUS))
    if unknown:
        parser.error(f"unknown site(s) {', '.join(unknown)}; the corpus: {', '.join(CORPUS)}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="onboarding-") as tmp:
        scratch = args.keep or Path(tmp)
        scratch.mkdir(parents=True, exist_ok=True)
        for kind in kinds:
            row = run_site(kind, args.seed, args.items, args.pages, scratch)
            rows.append(row)
            print(table([row]).splitlines()[-1], flush=True)
    print(
        f"\nonboarding, measured {dt.date.today().isoformat()} (seed {args.seed}, "
        f"{args.items} items a site, --pages {args.pages}):"
    )
    print(table(rows))
    ok, text = verdict(rows)
    print(text)
    if args.real_pages.is_dir():
        from bench.onboarding_real import run_real
        from bench.onboarding_real import table as real_table

        print("\nthe production sites' saved real pages, replayed: the scaffold's unedited")
        print("fields against the site spiders' items (outside the bar above):")
        print(real_table(run_real(args.real_pages)))
    else:
        print(f"\n(no saved real pages at {args.real_pages}: their rows left out)")
    return smoke.goals_status(args, ok)


if __name__ == "__main__":
    sys.exit(main())
