"""historySearch: a git revision's ranking statement against this tree's, alternated.

    python -m bench.history_ab --reuse recall_bench_<pid> [--rev cc966d1] [--reps 15]

On a database kept by `bench.run --keep`: the bench workspace's agent searches the rare and the
common marker term from its owner's DM, through the app in process (historySearch end to end
over HTTP), switching app.history.search's statement function between the revision's
app/data/history_search.py and this tree's for every search, in alternating order, a fresh turn
per search (the first page: weights computed and kept) and the same search again in that turn
(the kept weights). Both run on this tree's pool (app/db.py) and the same database, so only the
statement differs. Prints the medians (ms) as JSON. The revision's ranking weights are this
tree's, except CONTEXT_SHARE (0.4 before the second relevance round).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from app.api.ids import encode_id
from app.data.tokens import issue_actor_token
from app.db import connect, resolve_database_url
from app.history import search as history
from app.settings import Settings
from bench.cluster import with_database
from bench.generate import PERSONA_HEAVY, SCOUT_AGENT
from bench.in_process import graphql

START = """mutation($s: ID!, $r: ID!) {
  startTurn(scopeId: $s, requesterId: $r, window: 0) { token }
}"""
SEARCH = "query($q: String!) { historySearch(query: $q, first: 8) { count } }"
TERMS = {"rare": "quokkaflux", "common": "orbit"}


def _revision_module(rev: str) -> ModuleType:
    source = subprocess.run(
        ["git", "show", f"{rev}:app/data/history_search.py"],  # noqa: S607 (git on PATH)
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    path = Path(tempfile.mkdtemp()) / "history_search_rev.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("history_search_rev", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _as(cls: Any, value: Any, **changes: Any) -> Any:
    """`value` as the revision's dataclass `cls`: the fields they share."""
    fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(cls)}
    return cls(**{**fields, **changes})


async def run(dsn: str, rev: str, reps: int) -> dict[str, dict[str, float]]:
    old = _revision_module(rev)
    # app.history.search calls the statement function it imported: switch it there.
    namespace = vars(history)
    current = namespace["search"]

    async def before(
        db: Any, destination: Any, filters: Any, rank: Any, page: Any, **_: Any
    ) -> Any:
        return await old.search(
            db, destination, _as(old.SearchFilters, filters),
            _as(old.RankInputs, rank, context_share=0.4), _as(old.PageRequest, page),
        )  # fmt: skip

    conn = await connect(dsn)
    try:
        ws = await conn.fetchval("select id from workspaces where key = 'bench'")
        scope = await conn.fetchval(
            "select id from scopes where workspace_id = $1 and key = $2",
            ws, f"dm-{PERSONA_HEAVY}-{SCOUT_AGENT}",
        )  # fmt: skip
        owner = await conn.fetchval(
            "select id from actors where workspace_id = $1 and key = $2", ws, PERSONA_HEAVY
        )
        token = await issue_actor_token(conn, "bench", "agent", SCOUT_AGENT)
    finally:
        await conn.close()
    out: dict[str, dict[str, float]] = {}
    async with graphql(dsn) as gql:
        for name, term in TERMS.items():
            times: dict[str, list[float]] = {}
            for i in range(reps + 2):  # the first two rounds warm up
                for which in ("before", "after") if i % 2 == 0 else ("after", "before"):
                    namespace["search"] = before if which == "before" else current
                    turn = await gql(
                        START,
                        {"s": encode_id("Scope", scope), "r": encode_id("Member", owner)},
                        token,
                    )
                    for kind in ("first", "repeat"):
                        started = time.perf_counter()
                        await gql(SEARCH, {"q": term}, turn["startTurn"]["token"])
                        if i >= 2:
                            times.setdefault(f"{which} {kind}", []).append(
                                (time.perf_counter() - started) * 1000
                            )
            out[name] = {k: round(statistics.median(v), 2) for k, v in sorted(times.items())}
            print(name, json.dumps(out[name]), file=sys.stderr, flush=True)
    namespace["search"] = current
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reuse", required=True, help="database kept by bench.run --keep")
    parser.add_argument("--rev", default="cc966d1", help="the revision to compare against")
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args(argv)
    server = resolve_database_url(Settings())
    dsn = with_database(server, args.reuse)
    print(json.dumps(asyncio.run(run(dsn, args.rev, args.reps))))


if __name__ == "__main__":
    main()
