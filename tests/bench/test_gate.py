"""bench.gate: the gate's evaluation set (fingerprints/evaluation/cases.toml), its counts
of false passes and false stops, and the set's own checks."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import crawlers.settings
from bench.gate import main, run, table
from fingerprints.evaluation.cases import KINDS, Case, CaseError, Outcome, load_cases

# In-process, but seconds of CPU (the gate's 60 evaluation cases): the integration tier keeps
# `make test-fast` within its budget.
pytestmark = pytest.mark.integration

CASES = load_cases()
SITES = sorted({case.site for case in CASES})


@pytest.fixture(autouse=True)
def facebook_session(monkeypatch: pytest.MonkeyPatch) -> None:
    # The facebook spider refuses to start without a session (a made-up one: no fetch).
    monkeypatch.setattr(
        crawlers.settings, "FACEBOOK_SESSION_COOKIES", "c_user=1; xs=test", raising=False
    )


def test_the_set_covers_every_site_and_kind() -> None:
    assert len(CASES) >= 40
    assert SITES == [
        "booking_com",
        "facebook_marketplace",
        "g2",
        "hermes",
        "idealista",
        "trustpilot",
    ]
    assert set(Counter(case.kind for case in CASES)) == set(KINDS)
    for site in SITES:
        kinds = {case.kind for case in CASES if case.site == site}
        assert {"current", "broken extraction", "absent not lost", "blocked"} <= kinds, site
    # Every page is there and every edit changes it.
    for case in CASES:
        assert case.body(), case.name


@pytest.mark.parametrize("site", SITES)
def test_each_site_gives_the_expected_verdicts(site: str) -> None:
    results = run(sites=[site])
    wrong = {
        o.case.name: (o.case.expect, o.verdict, o.reason[-300:]) for o, _ in results if not o.ok
    }
    assert wrong == {}


def _outcome(expect: str, verdict: str) -> Outcome:
    case = Case("c", "s", "t", "p", "u", expect, "current")
    return Outcome(case, verdict, "why")


def test_false_passes_and_false_stops() -> None:
    assert _outcome("extraction_broken", "drifted").false_pass
    assert _outcome("blocked", "passed").false_pass
    assert _outcome("passed", "extraction_broken").false_stop
    assert _outcome("drifted", "structure_changed").false_stop
    mismatch = _outcome("passed", "drifted")
    assert not mismatch.ok and not mismatch.false_pass and not mismatch.false_stop
    lines = table([(_outcome("passed", "extraction_broken"), 0.5)])
    assert "| c | current | passed | extraction_broken **FALSE STOP** | 0.5 |" in lines


def test_a_malformed_set_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "cases.toml"
    bad.write_text('[[case]]\nname = "x"\nsite = "g2"\n')
    assert main(["--cases", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "case 1: missing page_type, page, url, kind, expect (each case needs" in err
    assert err.count("\n") == 1
    edit = tmp_path / "edit.toml"
    edit.write_text(
        '[[case]]\nname = "x"\nsite = "g2"\npage_type = "product_reviews"\n'
        'page = "fixtures/product_reviews/clipforge-reviews.html"\nurl = "https://www.g2.com/"\n'
        'kind = "current"\nexpect = "passed"\nedits = [{ re = "no such text" }]\n'
    )
    with pytest.raises(CaseError, match="changes nothing"):
        load_cases(edit)[0].body()
