"""The chaos harness's truth: stored documents against the generator, figures against it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.chaos import ChaosResult, FaultPlan, Takeover, takeover_checks
from bench.soak import main
from bench.truth import Check, Truth, checks, expected_products, item_key, tally
from standins.demo_site.catalog import build_catalog

BASE = "http://shop.test"
STARTED_MS = 1_700_000_000_000
JOB = "demo-job"


def stored(product: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A product as the store writes it: its fields plus the bookkeeping fields."""
    return {
        **product,
        "item_key": item_key(product["sku"]),
        "job_id": JOB,
        "first_seen": "2023-11-14T22:13:20.500Z",  # STARTED_MS + 500 ms
        "last_changed": "2023-11-14T22:13:20.500Z",
        **changes,
    }


@pytest.fixture(scope="module")
def expected() -> dict[str, dict[str, Any]]:
    return expected_products(build_catalog(7, 6), BASE)


def test_a_faithful_store_is_all_truth(expected: dict[str, dict[str, Any]]) -> None:
    truth = tally(
        expected, [stored(p) for p in expected.values()], job_id=JOB, started_ms=STARTED_MS
    )
    assert (truth.expected, truth.stored, truth.job_docs, truth.new) == (6, 6, 6, 6)
    assert not (truth.missing or truth.unexpected or truth.duplicates or truth.incomplete)
    assert not (truth.complete_without_parts or truth.wrong_fields)


def test_findings_are_named(expected: dict[str, dict[str, Any]]) -> None:
    with_reviews = [p for p in expected.values() if p["reviews"]]
    a, b, c, d = with_reviews[:4]
    docs = [
        stored(a),
        stored(b, reviews=None),  # parts lost, not marked: passes as complete
        stored(c, reviews=None, incomplete=["reviews"]),  # marked: honest
        stored(d, price=d["price"] + 1),
        # The same product again under a key the catalog does not have.
        stored(a, item_key="demo:demo_product:url:" + a["url"]),
    ]
    truth = tally(expected, docs, job_id=JOB, started_ms=STARTED_MS)
    assert truth.complete_without_parts == [item_key(b["sku"])]
    assert truth.incomplete == [item_key(c["sku"])]
    assert truth.incomplete_parts == {"reviews": 1}
    assert truth.wrong_fields == [item_key(d["sku"])]
    assert truth.missing == sorted(set(expected) - {item_key(p["sku"]) for p in (a, b, c, d)})
    assert len(truth.missing) == 2
    assert truth.unexpected == ["demo:demo_product:url:" + a["url"]]
    assert truth.duplicate_skus == [a["sku"]] and truth.duplicate_urls == [a["url"]]
    assert truth.duplicates == 2


def test_marked_incomplete_with_every_part_is_reported(
    expected: dict[str, dict[str, Any]],
) -> None:
    product = next(iter(expected.values()))
    truth = tally(
        {item_key(product["sku"]): product},
        [stored(product, incomplete=["reviews"])],
        job_id=JOB,
        started_ms=STARTED_MS,
    )
    assert truth.incomplete == truth.marked_but_complete == [item_key(product["sku"])]


def test_new_changed_unchanged_from_the_timestamps(expected: dict[str, dict[str, Any]]) -> None:
    p1, p2, p3, p4 = list(expected.values())[:4]
    before = "2023-01-01T00:00:00.000Z"
    docs = [
        stored(p1),
        stored(p2, first_seen=before),  # seen before, changed in the job
        stored(p3, first_seen=before, last_changed=before),
        stored(p4, job_id="an-older-job", first_seen=before, last_changed=before),
    ]
    truth = tally(expected, docs, job_id=JOB, started_ms=STARTED_MS)
    assert (truth.job_docs, truth.new, truth.changed, truth.unchanged) == (3, 1, 1, 1)


def test_check_verdicts() -> None:
    assert Check("x", 5, 5).verdict == "ok"
    assert Check("x", 4, 5).verdict == "FAIL (-1)"
    assert not Check("x", None, 5).ok  # a figure the report lacks fails an enforced check
    assert Check("x", None, 5, enforced=False).ok
    assert Check("t", 3.2, 15.0, limit=True).ok and not Check("t", 16.0, 15.0, limit=True).ok
    assert Check("t", 1, 9, enforced=False).verdict == "info"


def test_info_rows_never_fail_the_run(tmp_path: Path) -> None:
    """A shown-only row that differs is ``info``, never counted: one FAIL is one failure."""
    info = Check("report blocks vs block pages served", 3, 5, enforced=False)
    assert not info.ok and not info.failed and info.verdict == "info"
    wrong = Check("missing", 1, 0)
    assert wrong.failed and wrong.verdict == "FAIL (+1)"
    result = ChaosResult(
        plan=FaultPlan(),
        job_id=JOB,
        run_dir=tmp_path,
        events=[],
        document={},
        truth=Truth(expected=6, stored=5, job_docs=5, new=5, changed=0, unchanged=0),
        checks=[Check("stored docs vs expected", 6, 6), wrong, info],
        counters={},
        served={"requests": 10, "503": 0, "slow": 0, "blocks": 0},
        exits=[],
        takeover=None,
        crawl_seconds=None,
        drain_seconds=None,
    )
    assert [check.name for check in result.failures] == ["missing"]
    table = result.table()
    assert table.splitlines()[-1] == "RESULT: FAIL (1 checks failed)"
    assert "read from Elasticsearch's jobs index" in table


def test_the_takeover_is_enforced_and_the_drain_s_pace_shown() -> None:
    """Another worker draining (the spill shrinks) is the takeover; the spill's emptying
    grows with its size and ES's pace: shown, with that pace."""
    takeover = Takeover(True, "1:x", [1], 3000, shrink_seconds=9.5, empty_seconds=39.5)
    taken, empty = takeover_checks(takeover, 15.0)
    assert (taken.name, taken.ok, taken.enforced) == (
        "spill taken over s after drainer kill",
        True,
        True,
    )
    assert not empty.enforced and empty.verdict == "info" and empty.note == "3000 items, 100/s"
    late = takeover_checks(Takeover(True, "1:x", [1], 10, shrink_seconds=16.0), 15.0)[0]
    assert late.failed and late.verdict == "FAIL"
    never = takeover_checks(None, 15.0)[0]  # no kill measured: an enforced figure missing
    assert never.failed


def test_every_report_figure_is_checked(expected: dict[str, dict[str, Any]]) -> None:
    truth = tally(
        expected, [stored(p) for p in expected.values()], job_id=JOB, started_ms=STARTED_MS
    )
    document = {
        "items_scraped": 6,
        "items_stored": 6,
        "items_new": 6,
        "items_changed": 0,
        "items_unchanged": 0,
        "items_invalid": 0,
        "items_incomplete": 0,
        "spill_remaining": 0,
        "blocks": 0,
    }
    verdict = {check.name: check for check in checks(document, truth, blocks_served=0)}
    assert all(check.ok for check in verdict.values())
    for figure in document:
        assert any(figure in name for name in verdict), figure
    missing_figure = {k: v for k, v in document.items() if k != "items_incomplete"}
    lacking = checks(missing_figure, truth, blocks_served=0)
    assert [check.name for check in lacking if not check.ok] == ["report items_incomplete"]
    drifted = checks({**document, "items_scraped": 5}, truth, blocks_served=0)
    assert [check.verdict for check in drifted if not check.ok] == ["FAIL (-1)"]


def test_soak_refuses_an_empty_run(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--products", "0"])
    assert exit_.value.code == 2
    assert "--products, --workers and --partitions must be positive" in capsys.readouterr().err
