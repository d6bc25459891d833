"""One bounded scan of the sidecar (search_documents) in search order: global_seq DESC,
scope_id ASC, seq DESC, message_id ASC.

A page runs two (app.data.message_search.page): the probe, a little past what a full page needs,
and the rest, up to the budget, only when the probe's decision says so. Either way the
candidates are those of one scan of `budget` in search order.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.data.message_search.inputs import After
from app.data.params import Params

ORDER = "d.global_seq desc, d.scope_id, d.seq desc, d.message_id"
_DOCUMENT_COLUMNS = "d.message_id, d.global_seq, d.scope_id, d.seq, d.author_id, d.created_at"

# Documents read newest first before a query of several lexemes falls back to the planner.
WALK = 10_000


def several_lexemes(include: Sequence[str]) -> bool:
    """Queries the planner underestimates: it multiplies the selectivities of a query's
    lexemes, but words searched together (a phrase, a Chinese word's bigrams, "acme migration")
    occur together. At 1M messages it took a phrase with 4,791 matches for 90 rows and fetched
    every match from the GIN index (~15 ms), where reading the newest documents finds a page's
    candidates in ~3 ms."""
    return len(include) > 1 or any(" " in t or not t.isascii() for t in include)


def after_sql(g: str, s: str | None, q: str | None, m: str | None) -> str:
    """Strictly after the position (g, s, q, m), in search order; with s None, after all of
    global_seq g. The leading `<=` lets the recency index seek to the position."""
    if s is None:
        return f"d.global_seq < {g}"
    return (
        f"d.global_seq <= {g} and (d.global_seq < {g} or (d.global_seq = {g} and"
        f" (d.scope_id > {s} or (d.scope_id = {s} and (d.seq < {q} or"
        f" (d.seq = {q} and d.message_id > {m}))))))"
    )


def _after_condition(after: After, p: Params) -> str:
    g = p.add(after.global_seq)
    if after.scope_id is None:
        return after_sql(g, None, None, None)
    return after_sql(g, p.add(after.scope_id), p.add(after.seq), p.add(after.message_id))


def _scan(
    text: str,
    filters: list[str],
    after: str | None,
    limit: str,
    walk: str | None = None,
    gate: str | None = None,
    every_match: bool = False,
) -> str:
    """Documents matching the text, after the position, and every filter; with `walk`, only
    among the newest `walk` documents after the position, read through the recency index
    whatever the planner estimates; with `gate`, only if that (statement-constant) condition
    holds; with `every_match`, all matches found first (through the text index, whatever
    the planner estimates), then put in order."""
    source = "search_documents d"
    if walk is not None:
        start = f" and {after}" if after is not None else ""
        source = (
            f"(select d.* from search_documents d where d.workspace_id = $1{start}"
            f" order by {ORDER} limit {walk}) d"
        )
    where = ["d.workspace_id = $1", text]
    if after is not None:
        where.append(after)
    where += filters
    if gate is not None:
        where.append(gate)
    matches = f"select {_DOCUMENT_COLUMNS} from {source} where {' and '.join(where)}"
    if every_match:
        # OFFSET 0 keeps the ORDER BY ... LIMIT out of the subquery: the planner cannot
        # choose to walk the recency index hoping to meet the limit early.
        return f"select * from ({matches} offset 0) d order by {ORDER} limit {limit}"
    return f"{matches} order by {ORDER} limit {limit}"


def probe_scan(
    p: Params, text: str, filters: list[str], after: After | None, probe: int, *, several: bool
) -> str:
    """The first `probe` candidates after the cursor's position; a query of several lexemes
    looks for them among the newest WALK documents only."""
    position = _after_condition(after, p) if after is not None else None
    return _scan(text, filters, position, p.add(probe), p.add(WALK) if several else None)


def rest_scan(text: str, filters: list[str], budget: str, *, several: bool) -> str:
    """The candidates after the probe's, up to `budget` in all, if the probe's decision (the
    CTE `decided`, app.data.message_search.page) says to read on.

    A query of several lexemes reads on only when the newest WALK documents held fewer
    matches than the probe: its matches are sparse, so all of them are fetched through the
    text index and sorted. Left to the planner, which multiplies the lexemes' selectivities,
    it walked the recency index through the whole workspace (100k messages, "orbit kestrel":
    56 ms for 177 matches, which the text index finds in a few)."""
    return _scan(
        text,
        filters,
        # The position as the decision's columns (NULL scope, seq and message: after all of
        # global_seq, as after_sql writes it, since NULL comparisons remove the rest).
        after_sql(
            "(select g from decided)",
            "(select s from decided)",
            "(select q from decided)",
            "(select m from decided)",
        ),
        f"(select greatest({budget} - n, 0) from decided)",
        gate="(select go from decided)",
        every_match=several,
    )
