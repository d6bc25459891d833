"""The same benchmark on plain PostgreSQL and on a Citus cluster, one after the other, in one
command, and one table of both (docs/scale.md, Benchmark).

    scripts/citus-cluster start
    python -m bench.side_by_side --messages 1000000 \\
      --postgres postgresql://postgres@127.0.0.1:5432/postgres \\
      --citus postgresql://postgres@127.0.0.1:9700/postgres --out-dir docs/results

Each side is a whole `bench.run` (a fresh database, the same generated workspace: same
--messages and --seed, imported with `recall import`, `recall serve` measured over HTTP, the
baselines), run as its own process with DATABASE_URL naming that server. Its JSON is written to
`--out-dir` (`side-by-side-<messages>-{postgres,citus}.json`). Progress on stderr (bench.run's
own); the markdown table on stdout, with p50 / p99 per query kind at concurrency 1,
statements per request, the import rate, and the rare term against an ILIKE scan of the same
rows on each side.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.harness import say

SIDES = ("postgres", "citus")


def run_side(name: str, dsn: str, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    say(f"{name}: bench.run --messages {args.messages} on {dsn.rsplit('@', 1)[-1]}")
    subprocess.run(
        [
            sys.executable, "-m", "bench.run", "--messages", str(args.messages),
            "--seed", str(args.seed), "--out", str(out),
        ],
        env={**os.environ, "DATABASE_URL": dsn},
        stdout=subprocess.DEVNULL,
        check=True,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def _cell(row: dict[str, Any] | None, key: str) -> str:
    if not row or row.get(key) is None:
        return "–"
    return f"{row[key]:g}"


def table(results: dict[str, dict[str, Any]]) -> str:
    pg, citus = results["postgres"], results["citus"]
    lines = [
        "| case | PostgreSQL p50 | p99 | stmts | Citus p50 | p99 | stmts | Citus / PostgreSQL (p50) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for case, row in pg["rows"].items():
        a = row.get("http_c1")
        b = citus["rows"].get(case, {}).get("http_c1")
        ratio = (
            f"{b['p50_ms'] / a['p50_ms']:.1f}×"
            if a and b and a.get("p50_ms") and b.get("p50_ms")
            else "–"
        )
        lines.append(
            f"| {case} | {_cell(a, 'p50_ms')} | {_cell(a, 'p99_ms')} | {_cell(a, 'statements')}"
            f" | {_cell(b, 'p50_ms')} | {_cell(b, 'p99_ms')} | {_cell(b, 'statements')} | {ratio} |"
        )
    lines += ["", "| | PostgreSQL | Citus |", "|---|---:|---:|"]
    lines.append(
        "| `recall import` (msg/s) | "
        + " | ".join(f"{r['imported']['messages_per_second']:,.0f}" for r in (pg, citus))
        + " |"
    )

    def versus_ilike(r: dict[str, Any]) -> str:
        row = r["rows"].get("messageSearch rare", {})
        http, ilike = row.get("http_c1"), row.get("ilike")
        if not http or not ilike or not http.get("p50_ms"):
            return "–"
        return f"{ilike['p50_ms'] / http['p50_ms']:.1f}× ({ilike['p50_ms']:g} ms scan)"

    lines.append(
        "| messageSearch rare vs ILIKE (p50) | "
        + " | ".join(versus_ilike(r) for r in (pg, citus))
        + " |"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m bench.side_by_side", description=__doc__.split("\n")[0]
    )
    p.add_argument("--messages", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--postgres", required=True, help="a plain PostgreSQL server's DSN")
    p.add_argument("--citus", required=True, help="a Citus coordinator's DSN (workers registered)")
    p.add_argument("--out-dir", type=Path, default=Path("."))
    args = p.parse_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    results = {
        name: run_side(
            name,
            args.postgres if name == "postgres" else args.citus,
            args,
            args.out_dir / f"side-by-side-{args.messages}-{name}.json",
        )
        for name in SIDES
    }
    print(table(results))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main(sys.argv[1:])
