"""The two paths messageSearch's page takes for one word, timed against how common the word is,
on a database kept by bench.run: every match fetched through the text index and sorted, or the
recency index walked until a probe's matches are found. Where they cross is what
app.data.message_search.words.WALK_COST_RATIO encodes (docs/performance.md, Planned once).

    python -m bench.access_paths --reuse recall_bench_<pid> [--runs 9]

Each word is the least common of the workspace's plain lexemes with at least the listed number
of documents. Both statements are planned once (a generic plan, as the app runs them). Progress
on stderr, JSON on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import sys
import time
from typing import Any

from app.data.message_search.scan import ORDER
from app.data.message_search.words import WALK_COST_RATIO
from app.db import GENERIC_PLANNER_SETTINGS, connect, resolve_database_url
from app.settings import Settings
from bench.cluster import with_database

PROBE = 41  # a page of 20's probe
TEXT_INDEX = (
    "select d.message_id from (select d.* from search_documents d where d.workspace_id = $1"
    f" and d.tsv @@ $2::tsquery offset 0) d order by {ORDER} limit {PROBE}"
)
WALK = (
    "select d.message_id from search_documents d where d.workspace_id = $1"
    f" and ts_match_vq(d.tsv, $2::tsquery) order by {ORDER} limit {PROBE}"
)
TARGETS = (200, 500, 1000, 2000, 3000, 4500, 6500, 9000, 13000, 20000)
WARM = 2


async def main(args: argparse.Namespace) -> None:
    dsn = with_database(resolve_database_url(Settings()), args.reuse)
    conn = await connect(dsn, server_settings=GENERIC_PLANNER_SETTINGS)
    ws = await conn.fetchval("select id from workspaces order by id limit 1")
    documents = await conn.fetchval(
        "select documents from search_corpus_stats where workspace_id = $1", ws
    )
    out: dict[str, Any] = {
        "documents": documents,
        "gate": round(math.sqrt(PROBE * documents / WALK_COST_RATIO)),
        "words": [],
    }
    for target in TARGETS:
        row = await conn.fetchrow(
            "select lexeme, documents from search_term_stats where workspace_id = $1"
            " and documents >= $2 and lexeme ~ '^[a-z]+$' order by documents limit 1",
            ws,
            target,
        )
        if row is None:
            break
        query = "'" + row["lexeme"] + "'"
        timed: dict[str, float] = {}
        for label, sql in (("text_index_ms", TEXT_INDEX), ("walk_ms", WALK)):
            times = []
            for _ in range(args.runs + WARM):
                started = time.perf_counter()
                await conn.fetch(sql, ws, query)
                times.append((time.perf_counter() - started) * 1000)
            timed[label] = round(statistics.median(times[WARM:]), 2)
        word = {"documents": row["documents"], **timed}
        out["words"].append(word)
        print(f"bench.access_paths: {word}", file=sys.stderr)
    await conn.close()
    print(json.dumps(out, indent=2))


def cli(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m bench.access_paths", description=__doc__.split("\n")[0]
    )
    p.add_argument("--reuse", required=True, metavar="NAME", help="database kept by bench.run")
    p.add_argument("--runs", type=int, default=9, help="runs per path and word")
    asyncio.run(main(p.parse_args(argv)))


if __name__ == "__main__":
    cli()
