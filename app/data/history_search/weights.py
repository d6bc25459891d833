"""Word weighting: each query lexeme's inverse document frequency, and BM25 over the pool.

Each lexeme of the query (as the document vector would index the query's terms: stems, CJK
pairs, identifiers whole and in parts) weighs its inverse document frequency in the workspace
(search_term_stats, kept current as messages arrive: migrations/014 and 022). The statistics
move as messages arrive; a turn's later searches with the same binding (the next page, or the
same question again) rank with the weights its first one used, kept in turn_search_weights, so
that a cursor's position stays a position in the same order.
"""

from __future__ import annotations

from app.data.history_search.inputs import Bound


def weights_ctes(b: Bound) -> str:
    """CTEs `qlex`, `frozen`, `corpus` and `weights` (lexeme, its tsquery, its documents now
    and its idf as this search ranks with it)."""
    return f"""
qlex as materialized (
    select unnest(recall_query_lexemes({b.include})) as lexeme
),
frozen as materialized (
    select f.weights from turn_search_weights f
    where f.workspace_id = $1 and f.turn_id = {b.turn} and f.binding = {b.binding}
),
corpus as materialized (
    select greatest(coalesce(max(c.documents), 0), 1)::float8 as n,
           coalesce((select (f.weights->>'avgdl')::float8 from frozen f), greatest(
               coalesce(max(c.lexemes)::float8 / nullif(max(c.documents), 0), 1), 1)) as avgdl
    from search_corpus_stats c where c.workspace_id = $1
),
weights as materialized (
    select q.lexeme, quote_literal(q.lexeme)::tsquery as q,
        coalesce(s.documents, 0) as documents,
        coalesce((select (f.weights->'idf'->>q.lexeme)::float8 from frozen f),
        ln(1 + (c.n - coalesce(s.documents, 0) + 0.5) / (coalesce(s.documents, 0) + 0.5)))
        as idf
    from qlex q cross join corpus c
    left join search_term_stats s on s.workspace_id = $1 and s.lexeme = q.lexeme
)"""


def bm25(b: Bound, tsv: str) -> str:
    """BM25 of a document vector against the query's lexemes: term frequency saturating with
    k1, length normalised by b against the workspace's average document length. Each word is
    counted once per message (a repeated word is emphasis in chat, not more topic: no loss on
    eval/ against counting it), so each lexeme is one binary search of the vector rather than
    an unnest of it (1.2 against 4.6 ms per 1,000 rows).

    Times the share of the query's lexemes the message holds (Lucene's classic `coord`): a
    message that covers the question — most of its words, each common — is not outweighed by
    one that shares a single rarer word with it by chance. The answer to a question asked in
    other words than it was given in shares its common words, rarely its rare ones
    (docs/relevance.md, Coverage)."""
    return f"""((select coalesce(sum(w.idf), 0) * count(*)
                / greatest((select count(*) from weights), 1)
        from weights w where {tsv} @@ w.q)
        * ({b.k1} + 1) / (1 + {b.k1} * (1 - {b.b} + {b.b}
        * length({tsv}) / (select avgdl from corpus))))::float8"""
