"""Linked identities' statements (docs/identity.md): codes, links and their history.

A link is a row with its history: when it was confirmed (verified), approved, revoked and by
whom. It is never deleted, and only a live one (approved, not revoked: eligibility.live_link)
opens anything: the one path of app.data.eligibility (_linked_audiences) and speaker REQUESTER
(linked_identities below). The flow and its refusals (start, confirm, approve, revoke) are
app.identity.links; these functions state facts and change rows, and decide nothing.

Written to stay distributable (docs/scale.md): every statement names its workspace as
`workspace_id = $1` on every table it touches; a code is looked up in the confirmer's own
workspace (its token names it), so no lookup starts from a global value; inserts are
INSERT ... SELECT; FOR UPDATE locks rows of one workspace.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from app.data.eligibility import live_link
from app.data.executor import Executor


@dataclass(frozen=True, slots=True)
class LinkRow:
    id: int
    # The member who started it, then the one who confirmed it.
    member_a: int
    member_b: int
    verified_at: datetime  # when member_b confirmed the code
    approved_at: datetime | None  # when member_a approved it: live from then on
    approve_before: datetime | None  # until when a pending link may be approved
    revoked_at: datetime | None
    status: str  # pending, live, revoked or expired (a pending link not approved in time)

    def other(self, member_id: int) -> int:
        return self.member_b if member_id == self.member_a else self.member_a


@dataclass(frozen=True, slots=True)
class CodeRow:
    """A usable code: who started it, until when, and the namespace it is for (if any)."""

    id: int
    member_id: int
    expires_at: datetime
    for_namespace_id: int | None


@dataclass(frozen=True, slots=True)
class MemberRow:
    """A member as linking sees it, locked."""

    id: int
    namespace_id: int | None
    deactivated: bool


# A link that is neither live nor revoked waits for its starter, until approve_before.
_STATUS = (
    "case when revoked_at is not null then 'revoked'"
    " when approved_at is not null then 'live'"
    " when approve_before > now() then 'pending' else 'expired' end"
)


# What a write returns: the link's status is known from the write itself (Citus refuses now()
# in a RETURNING clause: a non-immutable function there cannot be pushed to the shard).
def _returning(status: str) -> str:
    return (
        "returning id, member_a, member_b, verified_at, approved_at, approve_before, revoked_at,"
        f" '{status}'::text as status"
    )


_LINK_COLUMNS = (
    f"id, member_a, member_b, verified_at, approved_at, approve_before, revoked_at,"
    f" {_STATUS} as status"
)
# A link that is live or still waiting for approval: what "already linked into that
# namespace" counts, so that a second link cannot be stacked beside a pending one.
_OPEN = "l.revoked_at is null and (l.approved_at is not null or l.approve_before > now())"


async def other_namespace(
    db: Executor, workspace_id: int, member_id: int, namespace: str
) -> int | None:
    """The id of the workspace's namespace named `namespace`, unless it is the member's own."""
    found: int | None = await db.fetchval(
        "select n.id from namespaces n join actors a on a.workspace_id = $1 and a.id = $2"
        " where n.workspace_id = $1 and n.name = $3"
        " and n.id is distinct from a.namespace_id",
        workspace_id,
        member_id,
        namespace,
    )
    return found


async def insert_code(
    db: Executor,
    workspace_id: int,
    member_id: int,
    code_hash: bytes,
    ttl_seconds: int,
    for_namespace: int | None,
) -> datetime:
    """Store a new code's digest, usable for `ttl_seconds`; when it expires."""
    expires_at: datetime = await db.fetchval(
        "insert into identity_link_codes"
        " (workspace_id, member_id, code_hash, expires_at, for_namespace_id)"
        " select $1, $2, $3, now() + make_interval(secs => $4), $5 returning expires_at",
        workspace_id,
        member_id,
        code_hash,
        float(ttl_seconds),
        for_namespace,
    )
    return expires_at


async def cancel_unused_codes(db: Executor, workspace_id: int, member_id: int) -> None:
    await db.execute(
        "update identity_link_codes set cancelled_at = now()"
        " where workspace_id = $1 and member_id = $2 and used_at is null"
        " and cancelled_at is null",
        workspace_id,
        member_id,
    )


async def usable_code(
    db: Executor, workspace_id: int, code_hash: bytes, *, lock: bool
) -> CodeRow | None:
    """The usable code of this workspace with that digest — unused, not cancelled, not
    expired, its starter still active — or None: a code of another workspace is unknown here.
    `lock`: FOR UPDATE of the code row (confirming)."""
    found = await db.fetchrow(
        "select c.id, c.member_id, c.expires_at, c.for_namespace_id from identity_link_codes c"
        " join actors a on a.workspace_id = $1 and a.id = c.member_id"
        " where c.workspace_id = $1 and c.code_hash = $2 and c.used_at is null"
        " and c.cancelled_at is null and c.expires_at > now() and a.deactivated_at is null"
        + (" for update of c" if lock else ""),
        workspace_id,
        code_hash,
    )
    return CodeRow(**dict(found)) if found is not None else None


async def lock_members(
    db: Executor, workspace_id: int, first_id: int, second_id: int
) -> dict[int, MemberRow]:
    """Both members, by id, locked in id order, so that two confirmations or approvals touching
    either of them take turns and the live-link checks cannot race; one that is gone (or no
    member) is absent."""
    members = await db.fetch(
        "select id, namespace_id, deactivated_at is not null as deactivated from actors"
        " where workspace_id = $1 and id = any($2::bigint[]) and kind = 'member'"
        " order by id for update",
        workspace_id,
        [first_id, second_id],
    )
    return {r["id"]: MemberRow(**dict(r)) for r in members}


async def has_open_link(
    db: Executor, workspace_id: int, starter: MemberRow, confirmer: MemberRow
) -> bool:
    """Whether either member already has a live or pending link into the other's namespace."""
    found: bool = await db.fetchval(
        "select exists (select 1 from identity_links l where l.workspace_id = $1"
        f" and {_OPEN} and ("
        " (l.member_a = $2 and l.namespace_b = $5) or (l.member_b = $2 and l.namespace_a = $5)"
        " or (l.member_a = $3 and l.namespace_b = $4) or (l.member_b = $3 and l.namespace_a = $4)"
        "))",
        workspace_id,
        starter.id,
        confirmer.id,
        starter.namespace_id,
        confirmer.namespace_id,
    )
    return found


async def use_code(db: Executor, workspace_id: int, code_id: int) -> None:
    await db.execute(
        "update identity_link_codes set used_at = now() where workspace_id = $1 and id = $2",
        workspace_id,
        code_id,
    )


async def insert_pending_link(
    db: Executor,
    workspace_id: int,
    starter: MemberRow,
    confirmer: MemberRow,
    code_id: int,
    ttl_seconds: int,
) -> LinkRow:
    """A pending link from the starter to the confirmer, approvable for `ttl_seconds`."""
    row = await db.fetchrow(
        "insert into identity_links"
        " (workspace_id, member_a, namespace_a, member_b, namespace_b, code_id, approve_before)"
        " select $1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7) "
        + _returning("pending"),
        workspace_id,
        starter.id,
        starter.namespace_id,
        confirmer.id,
        confirmer.namespace_id,
        code_id,
        float(ttl_seconds),
    )
    assert row is not None
    return LinkRow(**dict(row))


async def starters_link(
    db: Executor, workspace_id: int, member_id: int, link_id: int
) -> LinkRow | None:
    """The link, if `member_id` started it."""
    row = await db.fetchrow(
        f"select {_LINK_COLUMNS} from identity_links"
        " where workspace_id = $1 and id = $2 and member_a = $3",
        workspace_id,
        link_id,
        member_id,
    )
    return LinkRow(**dict(row)) if row is not None else None


async def approve_pending(db: Executor, workspace_id: int, link_id: int) -> None:
    """Approve the link if it is still pending at the moment of the update (a concurrent
    decline or expiry wins)."""
    await db.execute(
        "update identity_links set approved_at = now(), approve_before = null"
        " where workspace_id = $1 and id = $2 and revoked_at is null"
        " and approved_at is null and approve_before > now()",
        workspace_id,
        link_id,
    )


async def revoke_own_link(
    db: Executor, workspace_id: int, member_id: int, link_id: int
) -> LinkRow | None:
    """Revoke one of `member_id`'s links (either side) that is not revoked yet; None when
    there is no such link."""
    row = await db.fetchrow(
        "update identity_links set revoked_at = now(), revoked_by = $3, revoked_via = 'member'"
        " where workspace_id = $1 and id = $2 and (member_a = $3 or member_b = $3)"
        " and revoked_at is null " + _returning("revoked"),
        workspace_id,
        link_id,
        member_id,
    )
    return LinkRow(**dict(row)) if row is not None else None


async def own_link(db: Executor, workspace_id: int, member_id: int, link_id: int) -> LinkRow | None:
    """The link, if `member_id` is either of its members."""
    row = await db.fetchrow(
        f"select {_LINK_COLUMNS} from identity_links"
        " where workspace_id = $1 and id = $2 and (member_a = $3 or member_b = $3)",
        workspace_id,
        link_id,
        member_id,
    )
    return LinkRow(**dict(row)) if row is not None else None


async def revoke_member_links(db: Executor, workspace_id: int, member_id: int, via: str) -> int:
    """Revoke every live link of a member, and cancel their unused codes (connector changes:
    revokeIdentityLinks, deactivateMember); how many links were live."""
    await cancel_unused_codes(db, workspace_id, member_id)
    revoked = await db.fetch(
        "update identity_links set revoked_at = now(), revoked_via = $3"
        " where workspace_id = $1 and revoked_at is null"
        " and (member_a = $2 or member_b = $2) returning id",
        workspace_id,
        member_id,
        via,
    )
    return len(revoked)


async def links_of(db: Executor, workspace_id: int, member_id: int) -> list[LinkRow]:
    """Every link of a member — pending, live, revoked, expired — oldest first."""
    rows = await db.fetch(
        f"select {_LINK_COLUMNS} from identity_links"
        " where workspace_id = $1 and member_a = $2"
        " union all"
        f" select {_LINK_COLUMNS} from identity_links"
        " where workspace_id = $1 and member_b = $2"
        " order by verified_at, id",
        workspace_id,
        member_id,
    )
    return [LinkRow(**dict(r)) for r in rows]


def linked_identities(member: str) -> str:
    """A member and the members linked to it by a live link, as a SQL bigint[] (speaker
    REQUESTER): `member` is a bigint SQL expression; the statement's $1 is the workspace."""
    return (
        f"(array[{member}] || array(select l.member_b from identity_links l"
        f" where l.workspace_id = $1 and l.member_a = {member} and {live_link('l')}"
        " union all"
        " select l.member_a from identity_links l"
        f" where l.workspace_id = $1 and l.member_b = {member} and {live_link('l')}))"
    )
