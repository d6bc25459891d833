"""Linked identities (docs/identity.md): one person's members in two namespaces, verified live.

A member starts a link (a short single-use code, stored only as its SHA-256 digest, like
tokens), optionally for one namespace; the same person confirms the code with their other
identity's member token, which makes a PENDING link; the starter then approves it, naming the
confirmer they meant (a code read over a shoulder or phished links nobody on its own). The link
is a row with its history: when it was confirmed (verified), approved, revoked and by whom. It
is never deleted, and only a live one (approved, not revoked: eligibility.live_link) opens
anything: the one path of app.data.eligibility (_linked_audiences) and speaker REQUESTER
(linked_identities below).

Written to stay distributable (docs/scale.md): every statement names its workspace as
`workspace_id = $1` on every table it touches; a code is looked up in the confirmer's own
workspace (its token names it), so no lookup starts from a global value; inserts are
INSERT ... SELECT; FOR UPDATE locks rows of one workspace.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from app.data.eligibility import live_link
from app.data.executor import Executor
from app.errors import BadUserInput

# Crockford's base32 alphabet: no I, L, O or U, so a code read aloud or typed is unambiguous.
_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_CODE_LENGTH = 10  # 50 bits, shown as XXXXX-XXXXX
_MAX_INPUT = 64

# Every refusal of confirmIdentityLink says only what the confirmer may know.
NOT_A_CODE = "this code is unknown, expired or already used"


@dataclass(frozen=True, slots=True)
class LinkCode:
    code: str
    expires_at: datetime


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


def new_code() -> str:
    raw = "".join(secrets.choice(_ALPHABET) for _ in range(_CODE_LENGTH))
    return f"{raw[:5]}-{raw[5:]}"


def normalize_code(code: str) -> str | None:
    """The code as stored (upper case, no separators), or None for text that is no code."""
    if len(code) > _MAX_INPUT:
        return None
    cleaned = "".join(ch for ch in code.upper() if ch not in "- \t")
    if len(cleaned) != _CODE_LENGTH or any(ch not in _ALPHABET for ch in cleaned):
        return None
    return cleaned


def hash_code(normalized: str) -> bytes:
    return hashlib.sha256(normalized.encode()).digest()


UNKNOWN_NAMESPACE = "unknown namespace: name one of this workspace's, other than your own"


async def start_link(
    db: Executor,
    workspace_id: int,
    member_id: int,
    ttl_seconds: int,
    namespace: str | None = None,
) -> LinkCode:
    """A new code for `member_id`, cancelling their unused ones (the caller's transaction).
    `namespace` (a name, `type:name`): only a member of that namespace may confirm it; it must
    be another namespace of the workspace (BadUserInput otherwise, before anything changes)."""
    for_namespace: int | None = None
    if namespace is not None:
        for_namespace = await db.fetchval(
            "select n.id from namespaces n join actors a on a.workspace_id = $1 and a.id = $2"
            " where n.workspace_id = $1 and n.name = $3"
            " and n.id is distinct from a.namespace_id",
            workspace_id,
            member_id,
            namespace,
        )
        if for_namespace is None:
            raise BadUserInput(UNKNOWN_NAMESPACE)
    await _cancel_unused_codes(db, workspace_id, member_id)
    code = new_code()
    normalized = normalize_code(code)
    assert normalized is not None
    expires_at: datetime = await db.fetchval(
        "insert into identity_link_codes"
        " (workspace_id, member_id, code_hash, expires_at, for_namespace_id)"
        " select $1, $2, $3, now() + make_interval(secs => $4), $5 returning expires_at",
        workspace_id,
        member_id,
        hash_code(normalized),
        float(ttl_seconds),
        for_namespace,
    )
    return LinkCode(code, expires_at)


async def _cancel_unused_codes(db: Executor, workspace_id: int, member_id: int) -> None:
    await db.execute(
        "update identity_link_codes set cancelled_at = now()"
        " where workspace_id = $1 and member_id = $2 and used_at is null"
        " and cancelled_at is null",
        workspace_id,
        member_id,
    )


async def _usable_code(db: Executor, workspace_id: int, code: str, *, lock: bool) -> asyncpg.Record:
    """The code row (id, member_id, expires_at, for_namespace_id) of a usable code of this
    workspace — unused, not cancelled, not expired, its starter still active — or
    BadUserInput(NOT_A_CODE): a code of another workspace is unknown here. `lock`: FOR UPDATE
    of the code row (confirming)."""
    normalized = normalize_code(code)
    if normalized is None:
        raise BadUserInput(NOT_A_CODE)
    found = await db.fetchrow(
        "select c.id, c.member_id, c.expires_at, c.for_namespace_id from identity_link_codes c"
        " join actors a on a.workspace_id = $1 and a.id = c.member_id"
        " where c.workspace_id = $1 and c.code_hash = $2 and c.used_at is null"
        " and c.cancelled_at is null and c.expires_at > now() and a.deactivated_at is null"
        + (" for update of c" if lock else ""),
        workspace_id,
        hash_code(normalized),
    )
    if found is None:
        raise BadUserInput(NOT_A_CODE)
    return found


async def code_starter(
    db: Executor, workspace_id: int, viewer_id: int, code: str
) -> tuple[int, datetime]:
    """Who started a usable code of this workspace, and until when it works: what the other
    identity is shown before confirming (identityLinkCode), so that nobody links themselves to
    a stranger who handed them a code. Reads only; the code stays as it was. It refuses what
    confirm_link refuses first (an unknown code: NOT_A_CODE; the viewer's own: OWN_CODE), so
    the preview tells nothing confirming does not."""
    found = await _usable_code(db, workspace_id, code, lock=False)
    if found["member_id"] == viewer_id:
        raise BadUserInput(OWN_CODE)
    return int(found["member_id"]), found["expires_at"]


async def confirm_link(
    db: Executor, workspace_id: int, confirmer_id: int, code: str, ttl_seconds: int
) -> LinkRow:
    """Confirm the code's starter and `confirmer_id` as one person, inside the caller's
    transaction: a PENDING link, which opens nothing until the starter approves it (approve_link)
    within `ttl_seconds`. Every refusal is BadUserInput, raised before anything is written, so
    that the caller's rollback leaves the code as it was (still usable). The code is used from
    here on: a second confirmer of the same code is refused like any used code."""
    found = await _usable_code(db, workspace_id, code, lock=True)
    starter_id: int = found["member_id"]
    if starter_id == confirmer_id:
        raise BadUserInput(OWN_CODE)
    starter, confirmer = await _lock_members(db, workspace_id, starter_id, confirmer_id)
    if starter["namespace_id"] == confirmer["namespace_id"]:
        raise BadUserInput(
            "both identities are in the same namespace; a link joins identities of two namespaces"
        )
    wanted = found["for_namespace_id"]
    if wanted is not None and wanted != confirmer["namespace_id"]:
        raise BadUserInput(
            "this code is for an identity of another namespace; confirm it with that one"
        )
    ns_a, ns_b = starter["namespace_id"], confirmer["namespace_id"]
    already = await db.fetchval(
        "select exists (select 1 from identity_links l where l.workspace_id = $1"
        f" and {_OPEN} and ("
        " (l.member_a = $2 and l.namespace_b = $5) or (l.member_b = $2 and l.namespace_a = $5)"
        " or (l.member_a = $3 and l.namespace_b = $4) or (l.member_b = $3 and l.namespace_a = $4)"
        "))",
        workspace_id,
        starter_id,
        confirmer_id,
        ns_a,
        ns_b,
    )
    if already:
        raise BadUserInput(
            "one of these identities already has a live or pending link into the other's"
            " namespace; revoke it first"
        )
    await db.execute(
        "update identity_link_codes set used_at = now() where workspace_id = $1 and id = $2",
        workspace_id,
        found["id"],
    )
    row = await db.fetchrow(
        "insert into identity_links"
        " (workspace_id, member_a, namespace_a, member_b, namespace_b, code_id, approve_before)"
        " select $1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7) "
        + _returning("pending"),
        workspace_id,
        starter_id,
        ns_a,
        confirmer_id,
        ns_b,
        found["id"],
        float(ttl_seconds),
    )
    assert row is not None
    return LinkRow(**dict(row))


async def _lock_members(
    db: Executor, workspace_id: int, starter_id: int, confirmer_id: int
) -> tuple[asyncpg.Record, asyncpg.Record]:
    """Both members (id, namespace_id), locked in id order, so that two confirmations or
    approvals touching either of them take turns and the live-link checks cannot race; a
    deactivated one (or one that is gone) makes the code unknown."""
    members = await db.fetch(
        "select id, namespace_id, deactivated_at is not null as deactivated from actors"
        " where workspace_id = $1 and id = any($2::bigint[]) and kind = 'member'"
        " order by id for update",
        workspace_id,
        [starter_id, confirmer_id],
    )
    by_id = {r["id"]: r for r in members}
    starter, confirmer = by_id.get(starter_id), by_id.get(confirmer_id)
    if starter is None or confirmer is None or starter["deactivated"] or confirmer["deactivated"]:
        raise BadUserInput(NOT_A_CODE)
    return starter, confirmer


async def approve_link(db: Executor, workspace_id: int, member_id: int, link_id: int) -> LinkRow:
    """The starter of a pending link approves the confirmer it names: the link is live from
    the next request on. Only the starter may (to anyone else, the confirmer included, the link
    is exactly as unknown as a nonexistent one); approving a live link again answers it as it
    is; a declined, revoked or expired one cannot be approved (start a new code)."""
    link = await _starters_link(db, workspace_id, member_id, link_id)
    if link.status == "pending":
        # The members first, as confirming and deactivating lock them (one lock order); a
        # deactivated one can no longer be linked.
        try:
            await _lock_members(db, workspace_id, link.member_a, link.member_b)
        except BadUserInput:
            raise BadUserInput("this link can no longer be approved; start a new code") from None
        # Still pending at the moment of the update (a concurrent decline or expiry wins).
        await db.execute(
            "update identity_links set approved_at = now(), approve_before = null"
            " where workspace_id = $1 and id = $2 and revoked_at is null"
            " and approved_at is null and approve_before > now()",
            workspace_id,
            link_id,
        )
        link = await _starters_link(db, workspace_id, member_id, link_id)
    if link.status != "live":
        raise BadUserInput(
            f"this link is {link.status} and can no longer be approved; start a new code"
        )
    return link


async def _starters_link(db: Executor, workspace_id: int, member_id: int, link_id: int) -> LinkRow:
    row = await db.fetchrow(
        f"select {_LINK_COLUMNS} from identity_links"
        " where workspace_id = $1 and id = $2 and member_a = $3",
        workspace_id,
        link_id,
        member_id,
    )
    if row is None:
        raise BadUserInput(UNKNOWN_LINK)
    return LinkRow(**dict(row))


UNKNOWN_LINK = "unknown identity link"
OWN_CODE = "confirm the code with your other identity, not the one that started it"


async def revoke_link(db: Executor, workspace_id: int, member_id: int, link_id: int) -> LinkRow:
    """Revoke one of `member_id`'s links (either side may): for a pending link, the starter
    declines it or the confirmer withdraws it. Revoking it again answers it as it is. A link
    that is not theirs is exactly as unknown as one that does not exist."""
    row = await db.fetchrow(
        "update identity_links set revoked_at = now(), revoked_by = $3, revoked_via = 'member'"
        " where workspace_id = $1 and id = $2 and (member_a = $3 or member_b = $3)"
        " and revoked_at is null " + _returning("revoked"),
        workspace_id,
        link_id,
        member_id,
    )
    if row is None:
        row = await db.fetchrow(
            f"select {_LINK_COLUMNS} from identity_links"
            " where workspace_id = $1 and id = $2 and (member_a = $3 or member_b = $3)",
            workspace_id,
            link_id,
            member_id,
        )
    if row is None:
        raise BadUserInput(UNKNOWN_LINK)
    return LinkRow(**dict(row))


async def revoke_member_links(db: Executor, workspace_id: int, member_id: int, via: str) -> int:
    """Revoke every live link of a member, and cancel their unused codes (connector changes:
    revokeIdentityLinks, deactivateMember); how many links were live."""
    await _cancel_unused_codes(db, workspace_id, member_id)
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
