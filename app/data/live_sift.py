"""Which of a commit's posts could be hits of which open searches: the one statement per
wake-up that lets a process leave asleep the subscribers a commit cannot concern (docs/live.md,
"Who is woken").

It applies each search's text condition — the very fragment messageSearch and the admission
statement apply (app.data.message_search.conditions.text_condition) — and nothing else: no
filter, no eligibility. A post it does not match is never a hit of that search, so a subscriber
left asleep misses nothing; a post it matches is still admitted by the full admission
statement, for that subscriber's reader, before anything is sent (app.data.live_admission). It
only ever removes work, never admits anything: the text never leaves the database, only ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.data.message_search.conditions import text_condition
from app.data.params import Params
from app.data.session import Session

# A search's words: (included, excluded), as parsed from its query.
Words = tuple[tuple[str, ...], tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class Posted:
    """A posted message as the sift saw it: its conversation, and which of the searches'
    words (their indexes in the list given) it matches."""

    scope_id: int
    matches: frozenset[int]


async def sift(
    db: Session, workspace_id: int, message_ids: Sequence[int], searches: Sequence[Words]
) -> dict[int, Posted]:
    """For each of `message_ids` that has a search document: its scope and the searches whose
    text condition it meets. A message without a document (not yet indexed, or gone) is absent:
    no search can admit it either."""
    p = Params([workspace_id])
    ids = p.add(list(message_ids), "bigint[]")
    tests = [
        f"case when {text_condition(include, exclude, p)} then {i} end"
        for i, (include, exclude) in enumerate(searches)
    ]
    matched = f"array_remove(array[{', '.join(tests)}]::int[], null)" if tests else "'{}'::int[]"
    rows = await db.fetch(
        f"select d.message_id, d.scope_id, {matched} as matches from search_documents d"
        f" where d.workspace_id = $1 and d.message_id = any({ids})",
        *p.values,
    )
    return {r["message_id"]: Posted(r["scope_id"], frozenset(r["matches"])) for r in rows}
