"""One bounded scan of the sidecar (search_documents) in search order: global_seq DESC,
scope_id ASC, seq DESC, message_id ASC.

A page runs two (app.data.message_search.page): the probe, a little past what a full page needs,
and the rest, up to the budget, only when the probe's decision says so. Either way the
candidates are those of one scan of `budget` in search order.

The statement is planned once per connection, so every access path is fixed by the SQL's
shape, never by the planner's estimates: a walk of the recency index, or every match fetched
through the text index and sorted, chosen by the term statistics (app.data.message_search.words)
in SQL, or (several lexemes, none of them rare) the newest WALK documents first, read by the
blocks that hold every lexeme (app.data.search_blocks).
"""

from __future__ import annotations

from collections.abc import Sequence

from app.data.message_search.inputs import After
from app.data.message_search.words import Words
from app.data.params import Params
from app.data.search_blocks import BLOCK

ORDER = "d.global_seq desc, d.scope_id, d.seq desc, d.message_id"
_DOCUMENT_COLUMNS = "d.message_id, d.global_seq, d.scope_id, d.seq, d.author_id, d.created_at"

# Documents read newest first before a query of several lexemes falls back to the text index
# (WALK / BLOCK blocks of them, of which only those holding every lexeme are read).
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


def _after_condition(after: After, p: Params) -> tuple[str, str]:
    """The condition, and the position's global_seq as bound."""
    g = p.add(after.global_seq)
    if after.scope_id is None:
        return after_sql(g, None, None, None), g
    return after_sql(g, p.add(after.scope_id), p.add(after.seq), p.add(after.message_id)), g


def _where(*conditions: str | None) -> str:
    return " and ".join(c for c in conditions if c)


def _walk(w: Words, filters: list[str], after: str | None, limit: str, gate: str | None) -> str:
    """Matches in search order, read newest first through the recency index (or an author's
    or a conversation's, migrations/030) until `limit` are found: the text condition in the
    form the text index cannot serve."""
    where = _where("d.workspace_id = $1", w.walked, after, *filters, gate)
    return f"select {_DOCUMENT_COLUMNS} from search_documents d where {where} order by {ORDER} limit {limit}"


def _every_match(
    w: Words, filters: list[str], after: str | None, limit: str, gate: str | None
) -> str:
    """Every match fetched through the text index, then put in order: OFFSET 0 keeps the
    ORDER BY ... LIMIT (and the filters, which another index might serve) out of the
    subquery, so the text index is the only way to its rows."""
    inner = _where("d.workspace_id = $1", w.indexed, gate)
    outer = _where(after, *filters) or "true"
    return (
        f"select {_DOCUMENT_COLUMNS} from (select d.* from search_documents d where {inner}"
        f" offset 0) d where {outer} order by {ORDER} limit {limit}"
    )


def _newest(
    w: Words,
    filters: list[str],
    after: str | None,
    after_global_seq: str | None,
    limit: str,
    blocks: str,
    gate: str,
) -> str:
    """Matches among the newest `blocks` blocks of documents (migrations/036) at or before the
    position, newest first: the blocks come through their own key, and only those that hold
    every lexeme of the query have their documents read (through the recency index, a block's
    range) and tested. A block without one of them holds no match, so the matches are those
    of a walk of the blocks' documents. The blocks come in order and each block's documents
    after them, so the sort is per block (the planner's incremental sort) and stops at
    `limit`. OFFSET 0 keeps a block's documents a subquery of their own, run for each block
    that holds the words: a range of the recency index, whatever the planner estimates (on a
    small table it would rather read every document once and join them to the blocks)."""
    window = _where(
        "b.workspace_id = $1",
        f"b.block <= {after_global_seq}::bigint / {BLOCK}" if after_global_seq else None,
        gate,
    )
    documents = _where(
        "d.workspace_id = $1",
        f"d.global_seq >= b.block * {BLOCK} and d.global_seq < (b.block + 1) * {BLOCK}",
        after,
        w.walked,
        *filters,
    )
    return (
        f"select {_DOCUMENT_COLUMNS} from (select b.block, b.tsv from search_blocks b"
        f" where {window} order by b.block desc limit {blocks}) b"
        f" cross join lateral (select {_DOCUMENT_COLUMNS} from search_documents d"
        f" where {documents} offset 0) d"
        f" where ts_match_vq(b.tsv, (select every from terms))"
        f" order by b.block desc, {ORDER} limit {limit}"
    )


def _either(
    w: Words, filters: list[str], after: str | None, limit: str, gate: str | None = None
) -> str:
    """The first `limit` matches in search order, by whichever path the term statistics say is
    cheaper (Words.gin): both are in the statement, and the one not taken never runs."""
    if not w.searchable:
        return _walk(w, filters, after, limit, gate)
    gin = w.gin(limit)
    walk_gate = _where(gate, f"not {gin}")
    gin_gate = _where(gate, gin)
    return (
        f"({_walk(w, filters, after, limit, walk_gate)})"
        f" union all ({_every_match(w, filters, after, limit, gin_gate)})"
    )


def probe_scan(
    p: Params, w: Words, filters: list[str], after: After | None, limit: str, *, several: bool
) -> str:
    """The first `limit` (the probe's bound size) candidates after the cursor's position; a
    query of several lexemes looks for them among the newest WALK documents only, unless its
    rarest lexeme is rare enough to fetch every match (`w.gin(limit)`, which the probe's
    decision reads too)."""
    position, g = _after_condition(after, p) if after is not None else (None, None)
    if several:
        # Unless the rarest of its lexemes is rare enough to fetch all its matches (a rare
        # identifier beside a common word).
        gin = w.gin(limit)
        blocks = p.add(max(1, WALK // BLOCK))
        return (
            f"({_newest(w, filters, position, g, limit, blocks, f'not {gin}')})"
            f" union all ({_every_match(w, filters, position, limit, gin)})"
        )
    return _either(w, filters, position, limit)


def rest_scan(w: Words, filters: list[str], budget: str, *, several: bool) -> str:
    """The candidates after the probe's, up to `budget` in all, if the probe's decision (the
    CTE `decided`, app.data.message_search.page) says to read on.

    A query of several lexemes reads on only when the newest WALK documents held fewer
    matches than the probe: its matches are sparse, so all of them are fetched through the
    text index and sorted. Left to the planner, which multiplies the lexemes' selectivities,
    it walked the recency index through the whole workspace (100k messages, "orbit kestrel":
    56 ms for 177 matches, which the text index finds in a few)."""
    # The position as the decision's columns (NULL scope, seq and message: after all of
    # global_seq, as after_sql writes it, since NULL comparisons remove the rest).
    after = after_sql(
        "(select g from decided)",
        "(select s from decided)",
        "(select q from decided)",
        "(select m from decided)",
    )
    limit = f"(select greatest({budget} - n, 0) from decided)"
    gate = "(select go from decided)"
    if several:
        return _every_match(w, filters, after, limit, gate)
    return _either(w, filters, after, limit, gate)
