"""The audiences a conversation's messages are written with and shown to (docs/design.md,
Audiences), derived in one place for the importer and for live changes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.data.executor import Executor


@dataclass(frozen=True, slots=True)
class AudienceSpec:
    """An audience before it has a row: kind and (for members/external) its reader ids, sorted
    and distinct, as audiences_identity expects. The namespace is the workspace's."""

    kind: str
    readers: tuple[int, ...] = ()


def conversation_audiences(
    kind: str, visibility: str | None, people: Sequence[int]
) -> tuple[AudienceSpec, AudienceSpec]:
    """(origin, destination) of a channel or DM whose human members are `people`.

    Agents are never readers: only the conversation's people are. A thread has its parent's.
    """
    readers = tuple(sorted(set(people)))
    if kind == "dm" or visibility == "private":
        both = AudienceSpec("members", readers)
        return both, both
    if visibility == "public":
        both = AudienceSpec("workspace")
        return both, both
    if visibility == "shared":
        return AudienceSpec("members", readers), AudienceSpec("external", readers)
    # "open": a truly public space; only public text may be shown there.
    return AudienceSpec("public"), AudienceSpec("external")


def follows_membership(kind: str, visibility: str | None) -> bool:
    """Whether the conversation's audiences are made of its people, so that a membership
    change gives its later messages a new audience (interval membership)."""
    return kind == "dm" or visibility in ("private", "shared")


async def audience_id(
    db: Executor, workspace_id: int, namespace_id: int, spec: AudienceSpec
) -> int:
    """The id of the audience row for `spec`, created if this workspace has none yet (audiences
    are stored once: audiences_identity)."""
    ns = None if spec.kind == "public" else namespace_id
    found: int = await db.fetchval(
        """
        with created as (
            insert into audiences (workspace_id, kind, namespace_id, readers)
            select $1, $2, $3, $4::bigint[]
            on conflict do nothing
            returning id
        )
        select id from created
        union all
        select id from audiences
        where workspace_id = $1 and kind = $2 and coalesce(namespace_id, 0) = coalesce($3, 0)
          and readers = $4::bigint[]
        limit 1
        """,
        workspace_id,
        spec.kind,
        ns,
        list(spec.readers),
    )
    return found
