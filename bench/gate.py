"""The speed gate: both searches against an ILIKE scan of the same rows, checked against a
committed baseline, so that a slowdown fails CI the day it lands instead of an issue later.

Milliseconds depend on the machine; a ratio to a scan measured in the same run mostly does
not. Each gated case's p50 end to end (`recall serve`, keep-alive client) is divided by the
p50 of the rare word's ILIKE scan (every readable row read: bench.baselines.ILIKE_SQL) in the
same round; the gate takes each case's best ratio over `--rounds` rounds on one 100k database
(generated and imported once), and fails when it is worse than `bench/gate-baseline.json` by
more than the baseline's tolerance (25%). The best round, not the median: what a change costs
shows in every round, while a busy moment only ever adds.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres .venv/bin/python -m bench.gate
    # a new baseline: three unchanged runs kept, then the slowest of their best rounds
    ... --keep-results runs/1   (and runs/2, runs/3)
    ... --write-baseline --from-runs runs/1 runs/2 runs/3   # commit it, saying why

Progress on stderr (bench.run's), the verdict as JSON on stdout; exit status 1 on a regression.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

BASELINE = Path(__file__).with_name("gate-baseline.json")
REFERENCE = ("messageSearch rare", "ilike")
GATED = (
    "messageSearch rare",
    "messageSearch common",
    "messageSearch two words",
    "historySearch rare",
    "historySearch common",
    "historySearch two words",
    "historySearch rare, first search",
)
TOLERANCE = 0.25


def _round(messages: int, database: str | None, out: Path, reps: int) -> dict[str, Any]:
    """One bench.run round: the first imports and keeps the database, the others reuse it."""
    command = [
        sys.executable,
        "-m",
        "bench.run",
        "--messages",
        str(messages),
        "--reps",
        str(reps),
        "--skip-workers",
        "--skip-live",
        "--skip-expression-index",
        "--out",
        str(out),
        *(["--reuse", database] if database else ["--keep"]),
    ]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    results: dict[str, Any] = json.loads(out.read_text())
    return results


def _p50(results: dict[str, Any], case: str, column: str) -> float:
    stats = results["rows"].get(case, {}).get(column)
    if not stats or stats.get("p50_ms") is None:
        raise SystemExit(f"gate: {case} / {column} was not measured")
    return float(stats["p50_ms"])


def ratios(results: dict[str, Any]) -> dict[str, float]:
    """Each gated case's p50 over the reference scan's, in one round."""
    reference = _p50(results, *REFERENCE)
    return {case: _p50(results, case, "http_c1") / reference for case in GATED}


def measure(
    messages: int, rounds: int, reps: int, keep: Path | None = None
) -> list[dict[str, float]]:
    """Each round's ratios, on one database imported by the first round (each round's
    bench.run results kept in `keep` if given)."""
    per_round: list[dict[str, float]] = []
    database: str | None = None
    with tempfile.TemporaryDirectory(prefix="recall-gate-") as tmp:
        folder = keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        try:
            for n in range(rounds):
                print(f"gate: round {n + 1} of {rounds}", file=sys.stderr, flush=True)
                results = _round(messages, database, folder / f"round{n}.json", reps)
                database = database or _kept(results)
                per_round.append(ratios(results))
        finally:
            if database:
                _drop(database)
    return per_round


def best_ratios(per_round: list[dict[str, float]]) -> dict[str, float]:
    return {c: round(min(r[c] for r in per_round), 5) for c in GATED}


def baseline_ratios(runs: list[list[dict[str, float]]]) -> dict[str, float]:
    """The slowest of several unchanged runs' best rounds: one run's best moves by up to ~20%
    from the next run's on a quiet machine, so the baseline is where an unchanged tree can
    land, and the tolerance is counted beyond it."""
    bests = [best_ratios(run) for run in runs]
    return {c: max(b[c] for b in bests) for c in GATED}


def _kept(results: dict[str, Any]) -> str:
    name = results["imported"].get("kept_database")
    if not name:
        raise SystemExit("gate: bench.run did not say which database it kept")
    return str(name)


def _drop(database: str) -> None:
    from app.db import resolve_database_url
    from app.settings import Settings
    from bench.cluster import drop_database

    asyncio.run(drop_database(resolve_database_url(Settings()), database))


def verdict(measured: dict[str, float], baseline: dict[str, Any]) -> dict[str, Any]:
    tolerance = float(baseline.get("tolerance", TOLERANCE))
    cases = {}
    for case in GATED:
        was = float(baseline["ratios"][case])
        now = measured[case]
        cases[case] = {
            "baseline": was,
            "measured": now,
            "change": round(now / was - 1, 3),
            "ok": now <= was * (1 + tolerance),
        }
    return {"tolerance": tolerance, "ok": all(c["ok"] for c in cases.values()), "cases": cases}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.gate", description=__doc__.split("\n")[0])
    p.add_argument("--messages", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=40, help="requests per case and round")
    p.add_argument("--baseline", type=Path, default=BASELINE)
    p.add_argument(
        "--write-baseline", action="store_true", help="write the measured ratios as the baseline"
    )
    p.add_argument(
        "--keep-results", type=Path, default=None, help="keep each round's bench.run JSON here"
    )
    p.add_argument(
        "--from-runs",
        type=Path,
        nargs="+",
        default=None,
        help="instead of measuring, read runs kept with --keep-results (a folder each)",
    )
    args = p.parse_args(argv)
    if args.from_runs:
        runs = [
            [ratios(json.loads(f.read_text())) for f in sorted(folder.glob("round*.json"))]
            for folder in args.from_runs
        ]
    else:
        runs = [measure(args.messages, args.rounds, args.reps, args.keep_results)]
    if args.write_baseline:
        baseline = {
            "tolerance": TOLERANCE,
            "ratios": baseline_ratios(runs),
            "messages": args.messages,
            "runs": [best_ratios(r) for r in runs],
        }
        args.baseline.write_text(json.dumps(baseline, indent=2) + "\n")
        print(json.dumps(baseline, indent=2))
        return
    per_round = [r for run in runs for r in run]
    run = {"messages": args.messages, "rounds": len(per_round), "per_round": per_round}
    result = {**verdict(best_ratios(per_round), json.loads(args.baseline.read_text())), **run}
    print(json.dumps(result, indent=2))
    for case, c in result["cases"].items():
        mark = "ok " if c["ok"] else "SLOWER"
        print(
            f"gate: {mark} {case}: {c['measured']:.4f} of the scan (baseline {c['baseline']:.4f}, "
            f"{c['change']:+.0%})",
            file=sys.stderr,
        )
    if not result["ok"]:
        raise SystemExit(1)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
