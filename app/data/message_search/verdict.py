"""Each candidate's verdict: the first eligibility rule it fails, decided on its canonical
message row with the shared fragments of app.data.eligibility, in eligible()'s order."""

from __future__ import annotations

from app.data.eligibility import ALLOWED_FROM_CTE, audience_allows, has_evidence, lineage_allows


# Each candidate's canonical row by primary key (OFFSET 0 keeps it that lookup: with every
# column below in the join condition the planner would pick whichever index covers most of them
# and scan an author's messages in a scope), checked against the document; and its verdict:
# eligible()'s conjuncts in eligible()'s order, as a CASE so the audit can count each candidate
# under the first rule that removed it. NULL fails closed (coalesce), and so does a document
# that disagrees with its message row (m.id is null).
def _verdict(complete: bool) -> str:
    return f"""
    case
        when m.id is null or not coalesce({has_evidence("m")}, false) then 'no_evidence'
        when not coalesce({audience_allows("m", ALLOWED_FROM_CTE)}, false) then 'audience'
        when not coalesce({lineage_allows("m", ALLOWED_FROM_CTE, complete=complete)}, false)
            then 'lineage'
    end"""


_CANONICAL = """
    left join lateral (
        select m.id, m.scope_id, m.author_id, m.global_seq, m.seq, m.created_at, m.evidence,
               m.deleted, m.audience_id, m.has_provenance, m.lineage_audience_ids,
               m.lineage_denied
        from messages m where m.workspace_id = $1 and m.id = c.message_id
        offset 0
    ) m on m.scope_id = c.scope_id and m.author_id = c.author_id
        and m.global_seq = c.global_seq and m.seq = c.seq and m.created_at = c.created_at"""


def judged(cte: str, complete: bool) -> str:
    """The candidates of `cte` (a scan's) with their verdicts, as `excluded_by` (NULL:
    eligible). `complete`: the reader's Reader.lineage_complete (a missing lineage summary is
    denied, not walked)."""
    return (
        f"select c.message_id, c.global_seq, c.scope_id, c.seq, {_verdict(complete)}"
        f" as excluded_by from {cte} c {_CANONICAL}"
    )
