"""The query's words as the page statement reads them: computed once per statement, and how
common they are in the workspace, from the term statistics (search_term_stats, kept current
by the writers: migrations/014 and 022).

The page statement is planned once per connection (a generic plan, app.db), so it cannot leave
the access path to the planner, which would no longer see the words: the text index (GIN) for
a rare word, whose few matches are fetched and sorted, or the recency index for a common one,
walked newest first until a page's candidates are found. The statement holds both, each gated
by `gin` (a one-time filter: the other never runs), and `gin` is decided here from the
statistics, as historySearch decides its window (app.data.history_search.window).

A word in N of the workspace's D documents costs the text index about N rows, each fetched
from the table out of order, and a walk about `limit` x D / N rows read in index order, about
WALK_COST_RATIO times cheaper each. They cost the same where N = sqrt(limit x D / ratio): at
1M documents and a probe of 41, ~2,300 (measured: a word in 2,001 documents 1.6 ms through the
text index and 2.7 walked, one in 3,001 2.3 and 1.9, one in 4,512 4.2 and 1.1). An AND of
lexemes has at most as many matches as its rarest lexeme, so the rarest decides. The
statistics only choose the path: both paths return the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.data.params import Params

# A document fetched through the text index costs about this many read by a walk of the
# recency index (~1.1 against ~0.13 us at 1M messages, on PostgreSQL 15).
WALK_COST_RATIO = 8


@dataclass(frozen=True, slots=True)
class Words:
    """The words' CTE and their conditions on a search document `d`."""

    # CTE `terms`: the query's tsquery (`q`), its excluded words' (`excluded`), the AND of
    # every lexeme of its included words (`every`: what a block of documents holding a match
    # holds, migrations/036; with `several` only), the documents of its rarest lexeme
    # (`rarest`) and of the workspace (`documents`).
    cte: str
    # The condition the text index can serve (`@@`).
    indexed: str
    # The same condition in a form no index serves (the operator's function), for a walk of
    # the recency index the planner must not trade for the text index.
    walked: str
    # Whether there are words to look up in the text index (otherwise only the walk).
    searchable: bool

    def gin(self, limit: str) -> str:
        """True when fetching every match through the text index is cheaper than walking the
        recency index for `limit` of them (a statement constant)."""
        return (
            f"(select rarest <= sqrt({limit}::float8 * documents / {WALK_COST_RATIO}) from terms)"
        )


def words(
    include: Sequence[str], exclude: Sequence[str], p: Params, *, several: bool = False
) -> Words:
    """The words of a query; with none included, the condition only removes documents that
    contain an excluded word (a word that folds to nothing, a stop word, excludes nothing).
    `several`: the query is read by blocks too (app.data.message_search.scan), which need
    `every`."""
    inc, exc = p.add(list(include), "text[]"), p.add(list(exclude), "text[]")
    every = (
        f"recall_every_lexeme(recall_search_tsquery({inc}, '{{}}', false))"
        if several
        else "null::tsquery"
    )
    cte = f"""terms as materialized (
            select recall_search_tsquery({inc}, {exc}, false) as q,
                   recall_search_tsquery({exc}, '{{}}', true) as excluded,
                   {every} as every,
                   coalesce((select min(coalesce(s.documents, 0))
                             from unnest(recall_query_lexemes({inc})) l(lexeme)
                             left join search_term_stats s
                                    on s.workspace_id = $1 and s.lexeme = l.lexeme), 0)::float8
                       as rarest,
                   (select coalesce(max(c.documents), 0) from search_corpus_stats c
                    where c.workspace_id = $1)::float8 as documents
        )"""
    if include:
        return Words(
            cte,
            "d.tsv @@ (select q from terms)",
            "ts_match_vq(d.tsv, (select q from terms))",
            searchable=True,
        )
    if exclude:
        condition = "coalesce(not ts_match_vq(d.tsv, (select excluded from terms)), true)"
        return Words(cte, condition, condition, searchable=False)
    return Words(cte, "true", "true", searchable=False)
