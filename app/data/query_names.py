"""The people, agents and conversations a messageSearch operator's value may name
(app.message_search.operator_filters decides which of them a value names).

Values are resolved only against what the viewer may see: the workspace's directory of members
and agents (every member may see every actor's name and key, never content; deleted agents are
no one), the conversations the viewer may list (Reader.scope_predicate, as Workspace.scopes
lists them) and the viewer's own DMs. A private channel of others or someone else's DM is not
found here, exactly like a name that does not exist: nothing downstream can tell them apart.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.data.params import Params
from app.data.readers import Reader
from app.data.rows import ActorRow, ScopeRow, actor_columns
from app.data.session import Session

_SCOPE_COLUMNS = (
    "s.id, s.key, s.kind, s.visibility, s.name, s.parent_id, s.root_message_id,"
    " s.destination_audience_id"
)


async def actors_named(db: Session, reader: Reader, names: Sequence[str]) -> list[ActorRow]:
    """Members and agents whose key or display name is one of `names` (lower case; compared
    without case), and the viewer (for `me`)."""
    rows = await db.fetch(
        f"select {actor_columns('a')} from actors a where a.workspace_id = $1"
        " and a.deleted_at is null"
        " and (lower(a.key) = any($2::text[]) or lower(a.name) = any($2::text[]) or a.id = $3)",
        reader.workspace_id,
        list(names),
        reader.actor_id,
    )
    return [ActorRow.of(r) for r in rows]


async def scopes_named(
    db: Session, reader: Reader, names: Sequence[str], people: Sequence[int]
) -> tuple[list[ScopeRow], list[tuple[int, ScopeRow]]]:
    """The conversations the viewer may list whose key or name is one of `names` (lower case),
    and the viewer's DMs with each of `people` (every DM both are members of: a person's DM
    with their agents has the agents in it), as (person id, DM) pairs. One statement, of only
    the parts asked for (each part costs planning, ~0.4 ms)."""
    if not names and not people:
        return [], []
    p = Params([reader.workspace_id])
    viewer = p.add(reader.actor_id)
    parts = []
    if names:
        wanted = p.add(list(names), "text[]")
        parts.append(
            f"select {_SCOPE_COLUMNS}, null::bigint as person from scopes s"
            " where s.workspace_id = $1"
            f" and (lower(s.key) = any({wanted}) or lower(s.name) = any({wanted}))"
            f" and {reader.scope_predicate('s', viewer)}"
        )
    if people:
        parts.append(
            f"select {_SCOPE_COLUMNS}, pm.actor_id as person from scopes s"
            " join scope_members pm on pm.workspace_id = $1 and pm.scope_id = s.id"
            f" and pm.actor_id = any({p.add(list(people), 'bigint[]')}) and pm.actor_id <> {viewer}"
            " where s.workspace_id = $1 and s.kind = 'dm' and s.parent_id is null"
            " and exists (select 1 from scope_members vm where vm.workspace_id = $1"
            f" and vm.scope_id = s.id and vm.actor_id = {viewer})"
        )
    rows = await db.fetch(" union all ".join(parts), *p.values)
    named = [ScopeRow.of(r) for r in rows if r["person"] is None]
    dms = [(int(r["person"]), ScopeRow.of(r)) for r in rows if r["person"] is not None]
    return named, dms
