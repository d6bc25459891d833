"""Linked identities (docs/identity.md): one person's members in two namespaces, verified live.

A member starts a link (a short single-use code, stored only as its SHA-256 digest, like
tokens); the same person confirms the code with their other identity's member token. The
link is a row with its history: when it was verified, when and by whom it was revoked. It is
never deleted, and only a live one (revoked_at is null) opens anything: the one path of
app.data.eligibility (_linked_audiences) and speaker REQUESTER (linked_identities below).

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
    verified_at: datetime
    revoked_at: datetime | None

    def other(self, member_id: int) -> int:
        return self.member_b if member_id == self.member_a else self.member_a


_LINK_COLUMNS = "id, member_a, member_b, verified_at, revoked_at"


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


async def start_link(db: Executor, workspace_id: int, member_id: int, ttl_seconds: int) -> LinkCode:
    """A new code for `member_id`, cancelling their unused ones (the caller's transaction)."""
    await _cancel_unused_codes(db, workspace_id, member_id)
    code = new_code()
    normalized = normalize_code(code)
    assert normalized is not None
    expires_at: datetime = await db.fetchval(
        "insert into identity_link_codes (workspace_id, member_id, code_hash, expires_at)"
        " select $1, $2, $3, now() + make_interval(secs => $4) returning expires_at",
        workspace_id,
        member_id,
        hash_code(normalized),
        float(ttl_seconds),
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
    """The code row (id, member_id, expires_at) of a usable code of this workspace — unused,
    not cancelled, not expired, its starter still active — or BadUserInput(NOT_A_CODE): a code
    of another workspace is unknown here. `lock`: FOR UPDATE of the code row (confirming)."""
    normalized = normalize_code(code)
    if normalized is None:
        raise BadUserInput(NOT_A_CODE)
    found = await db.fetchrow(
        "select c.id, c.member_id, c.expires_at from identity_link_codes c"
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


async def confirm_link(db: Executor, workspace_id: int, confirmer_id: int, code: str) -> LinkRow:
    """Link the code's starter and `confirmer_id`, inside the caller's transaction; every
    refusal is BadUserInput, raised before anything is written, so that the caller's rollback
    leaves the code as it was (still usable)."""
    found = await _usable_code(db, workspace_id, code, lock=True)
    starter_id: int = found["member_id"]
    if starter_id == confirmer_id:
        raise BadUserInput(OWN_CODE)
    # Both members locked, in id order, so that two confirmations touching either of them
    # take turns and the live-link check below cannot race.
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
    if starter["namespace_id"] == confirmer["namespace_id"]:
        raise BadUserInput(
            "both identities are in the same namespace; a link joins identities of two namespaces"
        )
    ns_a, ns_b = starter["namespace_id"], confirmer["namespace_id"]
    already = await db.fetchval(
        "select exists (select 1 from identity_links l where l.workspace_id = $1"
        " and l.revoked_at is null and ("
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
            "one of these identities already has a live link into the other's namespace;"
            " revoke it first"
        )
    await db.execute(
        "update identity_link_codes set used_at = now() where workspace_id = $1 and id = $2",
        workspace_id,
        found["id"],
    )
    row = await db.fetchrow(
        "insert into identity_links"
        " (workspace_id, member_a, namespace_a, member_b, namespace_b, code_id)"
        f" select $1, $2, $3, $4, $5, $6 returning {_LINK_COLUMNS}",
        workspace_id,
        starter_id,
        ns_a,
        confirmer_id,
        ns_b,
        found["id"],
    )
    assert row is not None
    return LinkRow(**dict(row))


UNKNOWN_LINK = "unknown identity link"
OWN_CODE = "confirm the code with your other identity, not the one that started it"


async def revoke_link(db: Executor, workspace_id: int, member_id: int, link_id: int) -> LinkRow:
    """Revoke one of `member_id`'s links (either side may); revoking it again answers it as it
    is. A link that is not theirs is exactly as unknown as one that does not exist."""
    row = await db.fetchrow(
        "update identity_links set revoked_at = now(), revoked_by = $3, revoked_via = 'member'"
        " where workspace_id = $1 and id = $2 and (member_a = $3 or member_b = $3)"
        f" and revoked_at is null returning {_LINK_COLUMNS}",
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
    """Every link of a member, live and revoked, oldest first."""
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
        f" where l.workspace_id = $1 and l.member_a = {member} and l.revoked_at is null"
        " union all"
        " select l.member_a from identity_links l"
        f" where l.workspace_id = $1 and l.member_b = {member} and l.revoked_at is null))"
    )
