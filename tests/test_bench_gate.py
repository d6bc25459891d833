"""bench.gate's arithmetic: a case is judged by its p50 over the scan's in the same round, at
its best round, and fails only past the baseline's tolerance."""

from __future__ import annotations

from typing import Any

import pytest

from bench.gate import GATED, REFERENCE, baseline_ratios, best_ratios, ratios, verdict


def _round(scan_ms: float, case_ms: float) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = {case: {"http_c1": {"p50_ms": case_ms}} for case in GATED}
    rows.setdefault(REFERENCE[0], {})[REFERENCE[1]] = {"p50_ms": scan_ms}
    return {"rows": rows}


def test_a_ratio_does_not_move_with_the_machine() -> None:
    assert ratios(_round(200.0, 10.0)) == ratios(_round(400.0, 20.0))


def test_the_best_round_decides() -> None:
    """A busy moment or a plan flip in one round only adds; a slower tree is slower in all."""
    per_round = [ratios(_round(200.0, ms)) for ms in (14.0, 30.0, 12.0)]
    assert best_ratios(per_round)[GATED[0]] == pytest.approx(0.06)


def test_slower_past_the_tolerance_fails_and_within_it_passes() -> None:
    baseline = {"tolerance": 0.25, "ratios": dict.fromkeys(GATED, 0.05)}
    within = dict.fromkeys(GATED, 0.06)
    assert verdict(within, baseline)["ok"]
    slower = {**within, GATED[-1]: 0.0626}
    result = verdict(slower, baseline)
    assert not result["ok"]
    assert [c for c, v in result["cases"].items() if not v["ok"]] == [GATED[-1]]


def test_a_case_not_measured_is_an_error_not_a_pass() -> None:
    results = _round(200.0, 10.0)
    del results["rows"][GATED[1]]
    with pytest.raises(SystemExit):
        ratios(results)


def test_the_baseline_is_where_the_slowest_unchanged_run_landed() -> None:
    fast = [ratios(_round(200.0, ms)) for ms in (10.0, 11.0)]
    slow = [ratios(_round(200.0, ms)) for ms in (12.0, 20.0)]
    assert baseline_ratios([fast, slow])[GATED[0]] == pytest.approx(0.06)
