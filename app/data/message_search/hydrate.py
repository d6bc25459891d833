"""The page's messages, read in the page's statement from the canonical rows whose verdicts
admitted them (one statement sees one snapshot, so the row shown is the row found eligible),
with author and scope, the window of the body a hit is shown in, and its highlights."""

from __future__ import annotations

from collections.abc import Sequence

from app.data.messages import HEAD_COLUMNS
from app.data.params import Params
from app.data.rows import actor_columns

# The private-use characters that mark highlights in ts_headline output. Bodies may contain
# them too, so they are replaced in the highlighted copy by U+FFFD first: both are one UTF-16
# unit, so offsets into the copy are offsets into the body.
START_MARK = "\ue000"
STOP_MARK = "\ue001"
_REPLACEMENT = "\ufffd"
_HEADLINE_OPTIONS = f"HighlightAll=true, StartSel={START_MARK}, StopSel={STOP_MARK}"

# A hit is read and highlighted in a window of at most WINDOW characters of its body: all of
# it for the messages people write, and for a very long one (a pasted log, a 100 KB report)
# the part from a little before the first occurrence of a query term. ts_headline parses what
# it is given, so highlighting a whole 100 KB body cost ~28 ms a hit (a page of 100 such hits:
# 1.2 s and 10 MB); a window of 2,048 costs ~0.5 ms. Such a body is not returned by the
# page's statement at all: Message.body loads it when a client asks for it.
WINDOW = 2048
# Characters of context kept before the first occurrence when the window does not start at 0.
WINDOW_LEAD = 200
# The first occurrence is looked for regardless of case in this many leading characters, and
# as the term is written (case-sensitive, stopping at the first) in the rest: lower-casing a
# whole 100 KB body per hit was most of a long page's time.
CASELESS_PREFIX = 8192


def hydrated_ctes(p: Params, include: Sequence[str]) -> str:
    """CTEs `marks` (the English part of the query's terms, as a tsquery) and `hydrated`: each
    hit of `page` (by its `k`) with its message's head, its body if it fits the window
    (body_complete), the window and where it starts in UTF-16 units, author (a_) and scope
    (s_) columns, and the window with its matches marked."""
    terms = p.add(list(include), "text[]")
    # Marks in a body are replaced in the highlighted copy first (both are one UTF-16 unit).
    marks_from, marks_to = p.add(START_MARK + STOP_MARK), p.add(_REPLACEMENT * 2)
    options = p.add(_HEADLINE_OPTIONS)
    window, lead, prefix = p.add(WINDOW), p.add(WINDOW_LEAD), p.add(CASELESS_PREFIX)
    # Whole when it fits the window: its size in bytes (read from the value's header, no
    # detoasting) rules most bodies in or out; only one of up to 4 bytes a character is
    # counted.
    whole = (
        f"(octet_length(m.body) <= {window} or (octet_length(m.body) <= 4 * {window}"
        f" and length(m.body) <= {window}))"
    )
    return f"""marks as materialized (
            select recall_search_tsquery(
                array(select recall_without_cjk(t) from unnest({terms}) as t),
                '{{}}', true) as q
        ),
        hydrated as materialized (
            select pg.k, {HEAD_COLUMNS},
                   case when w.whole then m.body else '' end as body, w.whole as body_complete,
                   w.text as window_text,
                   -- Where the window starts in UTF-16 units: code points before it, plus
                   -- one more for each one beyond the BMP.
                   w.start + case when w.start = 0 then 0 else regexp_count(
                       left(m.body, w.start), '[\U00010000-\U0010ffff]') end as window_start,
                   {actor_columns("a", "a_")},
                   sc.id as s_id, sc.key as s_key, sc.kind as s_kind,
                   sc.visibility as s_visibility, sc.name as s_name,
                   sc.parent_id as s_parent_id, sc.root_message_id as s_root_message_id,
                   sc.destination_audience_id as s_destination_audience_id,
                   ts_headline('english', translate(w.text, {marks_from}, {marks_to}),
                       (select q from marks), {options}) as marked
            from page pg
            join messages m on m.workspace_id = $1 and m.id = pg.message_id
            join actors a on a.workspace_id = $1 and a.id = m.author_id
            join scopes sc on sc.workspace_id = $1 and sc.id = m.scope_id
            cross join lateral (
                select s.whole, s.start, substr(m.body, s.start + 1, {window}) as text
                from (
                    select o.whole, case when o.whole then 0 else greatest(0,
                        coalesce((select min(coalesce(
                                      nullif(strpos(lower(left(m.body, {prefix})), t), 0),
                                      nullif(strpos(m.body, t), 0)))
                                  from unnest({terms}) as t), 1)
                        - 1 - {lead}) end as start
                    from (select {whole} as whole) o
                    offset 0  -- computed once per hit, not once per use of `start`
                ) s
            ) w
        )"""
