"""The benchmark's tables: every case's latencies and baselines, and the targets' numbers."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from bench.harness import Stats
from bench.results import Results

_COLUMNS = [
    ("http_c1", "p50"),
    ("http_c1", "p95"),
    ("http_c1", "p99"),
    ("http_c8", "p50"),
    ("http_c8", "rps"),
    ("http_c1", "stmts"),
    ("http_c1", "db p50"),
    ("http_c1", "gw p50"),
    ("http_c1", "gw cpu"),
    ("sql_floor", "p50"),
    ("expression_gin", "p50"),
    ("rank_all_ts_rank_cd", "p50"),
    ("ilike", "p50"),
    ("n_plus_one", "p50"),
]


def _cell(s: Stats | None, what: str) -> str:
    if s is None:
        return "-"
    if s.error and s.p50_ms is None:
        return "ERR"
    value = {
        "p50": s.p50_ms,
        "p95": s.p95_ms,
        "p99": s.p99_ms,
        "rps": s.rps,
        "stmts": s.statements,
        "db p50": s.database_p50_ms,
        "gw p50": s.gateway_p50_ms,
        "gw cpu": s.gateway_cpu_ms,
    }[what]
    return "-" if value is None else f"{value}"


def table(results: Results) -> str:
    head = ["case"] + [f"{m} {w}" for m, w in _COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, row in results.rows.items():
        cells = [name] + [_cell(row.get(m), w) for m, w in _COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    errors = [
        f"- {name} / {m}: {s.error}"
        for name, row in results.rows.items()
        for m, s in row.items()
        if s.error
    ]
    return "\n".join(lines + (["", "errors:", *errors] if errors else []))


def targets(results: Results) -> dict[str, Any]:
    """What issue 15's targets are checked against: per case end to end p50/p99, database and
    gateway time, statements; the rare term against ILIKE; concurrency 8 with 1 and 2 workers."""
    out: dict[str, Any] = {"cases": {}}
    for name, row in results.rows.items():
        c1 = row.get("http_c1")
        if c1 is None or c1.p50_ms is None:
            continue
        out["cases"][name] = {
            "p50_ms": c1.p50_ms,
            "p99_ms": c1.p99_ms,
            "db_p50_ms": c1.database_p50_ms,
            "gateway_p50_ms": c1.gateway_p50_ms,
            "gateway_cpu_ms": c1.gateway_cpu_ms,
            "statements": c1.statements,
        }
    rare = results.rows.get("messageSearch rare", {})
    ilike, e2e = rare.get("ilike"), rare.get("http_c1")
    if ilike and e2e and ilike.p50_ms and e2e.p50_ms:
        out["rare_vs_ilike_end_to_end"] = round(ilike.p50_ms / e2e.p50_ms, 1)
        if e2e.database_p50_ms:
            out["rare_vs_ilike_database"] = round(ilike.p50_ms / e2e.database_p50_ms, 1)
    out["throughput_c8"] = {
        name: {
            "workers_1_rps": row["workers_1"]["rps"],
            "workers_2_rps": row["workers_2"]["rps"],
            "ratio": row["ratio"],
        }
        for name, row in results.throughput.items()
    }
    return out


def targets_table(t: dict[str, Any]) -> str:
    lines = [
        "| case | p50 | p99 | db p50 | gateway p50 | gateway CPU | stmts |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, c in t["cases"].items():
        cells = [c["p50_ms"], c["p99_ms"], c["db_p50_ms"], c["gateway_p50_ms"]]
        cells += [c["gateway_cpu_ms"], c["statements"]]
        lines.append(
            f"| {name} | " + " | ".join("-" if v is None else str(v) for v in cells) + " |"
        )
    if "rare_vs_ilike_end_to_end" in t:
        lines.append(
            f"\nrare term vs ILIKE: {t['rare_vs_ilike_end_to_end']}x end to end,"
            f" {t.get('rare_vs_ilike_database')}x for the app's SQL (db)"
        )
    for name, r in t["throughput_c8"].items():
        lines.append(
            f"concurrency 8, {name}: 1 worker {r['workers_1_rps']} req/s,"
            f" 2 workers {r['workers_2_rps']} req/s ({r['ratio']}x)"
        )
    return "\n".join(lines)


def jsonable(results: Results) -> dict[str, Any]:
    out = asdict(results)
    return out
