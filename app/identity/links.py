"""The link flow (docs/identity.md): preview, start, confirm, approve and revoke.

A member starts a link (a short single-use code, stored only as its SHA-256 digest, like
tokens), optionally for one namespace; the same person confirms the code with their other
identity's member token, which makes a PENDING link; the starter then approves it, naming the
confirmer they meant (a code read over a shoulder or phished links nobody on its own). Each
operation checks its policy, then its rules, inside its one transaction; every refusal is
BadUserInput raised before anything is written, so a rollback leaves everything as it was.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

from app import access
from app.data import directory, identity_links, live_events
from app.data.executor import Executor, Transactional
from app.data.identity_links import LinkRow, MemberRow
from app.data.readers import Reader
from app.data.retry import in_transaction
from app.data.rows import ActorRow
from app.data.session import Session
from app.errors import BadUserInput

# Crockford's base32 alphabet: no I, L, O or U, so a code read aloud or typed is unambiguous.
_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_CODE_LENGTH = 10  # 50 bits, shown as XXXXX-XXXXX
_MAX_INPUT = 64

# Every refusal of confirmIdentityLink says only what the confirmer may know.
NOT_A_CODE = "this code is unknown, expired or already used"
OWN_CODE = "confirm the code with your other identity, not the one that started it"
UNKNOWN_NAMESPACE = "unknown namespace: name one of this workspace's, other than your own"
UNKNOWN_LINK = "unknown identity link"


@dataclass(frozen=True, slots=True)
class LinkCode:
    code: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class Preview:
    """Who started a code, and until when it works."""

    starter: ActorRow
    expires_at: datetime


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


async def preview(db: Session, reader: Reader, code: str) -> Preview:
    """Who started a usable code of this workspace (identityLinkCode): what the other identity
    is shown before confirming, so that nobody links themselves to a stranger who handed them
    a code. Reads only (no transaction); the code stays as it was. It refuses what confirm
    refuses first (an unknown code: NOT_A_CODE; the viewer's own: OWN_CODE), so the preview
    tells nothing confirming does not."""
    access.PREVIEW_IDENTITY_LINK.check(reader)
    found = await _usable_code(db, reader.workspace_id, code, lock=False)
    if found.member_id == reader.actor_id:
        raise BadUserInput(OWN_CODE)
    (starter,) = await directory.actors_by_ids(db, reader.workspace_id, [found.member_id])
    return Preview(starter, found.expires_at)


async def start(
    db: Transactional, reader: Reader, ttl_seconds: int, namespace: str | None = None
) -> LinkCode:
    """A new code for the reader's member, cancelling their unused ones. `namespace` (a name,
    `type:name`): only a member of that namespace may confirm it; it must be another namespace
    of the workspace (BadUserInput otherwise, before anything changes)."""
    access.START_IDENTITY_LINK.check(reader)
    workspace_id, member_id = reader.workspace_id, reader.actor_id

    async def body() -> datetime:
        for_namespace: int | None = None
        if namespace is not None:
            for_namespace = await identity_links.other_namespace(
                db, workspace_id, member_id, namespace
            )
            if for_namespace is None:
                raise BadUserInput(UNKNOWN_NAMESPACE)
        await identity_links.cancel_unused_codes(db, workspace_id, member_id)
        normalized = normalize_code(code)
        assert normalized is not None
        return await identity_links.insert_code(
            db, workspace_id, member_id, hash_code(normalized), ttl_seconds, for_namespace
        )

    code = new_code()
    expires_at = await in_transaction(db, body)
    return LinkCode(code, expires_at)


async def confirm(db: Transactional, reader: Reader, code: str, ttl_seconds: int) -> LinkRow:
    """Confirm the code's starter and the reader's member as one person: a PENDING link, which
    opens nothing until the starter approves it (approve) within `ttl_seconds`. Every refusal
    comes before anything is written, so the code stays usable. The code is used from here on:
    a second confirmer of the same code is refused like any used code."""
    access.CONFIRM_IDENTITY_LINK.check(reader)
    workspace_id, confirmer_id = reader.workspace_id, reader.actor_id

    async def body() -> LinkRow:
        found = await _usable_code(db, workspace_id, code, lock=True)
        if found.member_id == confirmer_id:
            raise BadUserInput(OWN_CODE)
        starter, confirmer = await _active_members(db, workspace_id, found.member_id, confirmer_id)
        if starter is None or confirmer is None:
            raise BadUserInput(NOT_A_CODE)
        if starter.namespace_id == confirmer.namespace_id:
            raise BadUserInput(
                "both identities are in the same namespace; a link joins identities of two"
                " namespaces"
            )
        wanted = found.for_namespace_id
        if wanted is not None and wanted != confirmer.namespace_id:
            raise BadUserInput(
                "this code is for an identity of another namespace; confirm it with that one"
            )
        if await identity_links.has_open_link(db, workspace_id, starter, confirmer):
            raise BadUserInput(
                "one of these identities already has a live or pending link into the other's"
                " namespace; revoke it first"
            )
        await identity_links.use_code(db, workspace_id, found.id)
        return await identity_links.insert_pending_link(
            db, workspace_id, starter, confirmer, found.id, ttl_seconds
        )

    return await in_transaction(db, body)


async def approve(db: Transactional, reader: Reader, link_id: int | None) -> LinkRow:
    """The starter of a pending link approves the confirmer it names: the link is live from the
    next request on. Only the starter may (to anyone else, the confirmer included, the link is
    exactly as unknown as a nonexistent one, and so is an id that names no link: None);
    approving a live link again answers it as it is; a declined, revoked or expired one cannot
    be approved (start a new code)."""
    access.APPROVE_IDENTITY_LINK.check(reader)
    if link_id is None:
        raise BadUserInput(UNKNOWN_LINK)
    workspace_id, member_id = reader.workspace_id, reader.actor_id

    async def body() -> LinkRow:
        link = await _starters_link(db, workspace_id, member_id, link_id)
        if link.status == "pending":
            # The members first, as confirming and deactivating lock them (one lock order); a
            # deactivated one can no longer be linked.
            members = await _active_members(db, workspace_id, link.member_a, link.member_b)
            if None in members:
                raise BadUserInput("this link can no longer be approved; start a new code")
            await identity_links.approve_pending(db, workspace_id, link_id)
            link = await _starters_link(db, workspace_id, member_id, link_id)
        if link.status != "live":
            raise BadUserInput(
                f"this link is {link.status} and can no longer be approved; start a new code"
            )
        return link

    return await in_transaction(db, body)


async def revoke(db: Transactional, reader: Reader, link_id: int | None) -> LinkRow:
    """Revoke one of the reader's links (either side may): for a pending link, the starter
    declines it or the confirmer withdraws it. Revoking it again answers it as it is. A link
    that is not theirs, or an id that names no link (None), is exactly as unknown as one that
    does not exist."""
    access.REVOKE_IDENTITY_LINK.check(reader)
    if link_id is None:
        raise BadUserInput(UNKNOWN_LINK)
    workspace_id, member_id = reader.workspace_id, reader.actor_id

    async def body() -> LinkRow:
        link = await identity_links.revoke_own_link(db, workspace_id, member_id, link_id)
        if link is not None:
            # What the link opened closes: live subscribers recheck what they delivered.
            await live_events.record(db, workspace_id, [(None, live_events.ACCESS)])
        if link is None:
            link = await identity_links.own_link(db, workspace_id, member_id, link_id)
        if link is None:
            raise BadUserInput(UNKNOWN_LINK)
        return link

    return await in_transaction(db, body)


async def _usable_code(
    db: Executor, workspace_id: int, code: str, *, lock: bool
) -> identity_links.CodeRow:
    """The usable code of this workspace the text names, or BadUserInput(NOT_A_CODE)."""
    normalized = normalize_code(code)
    if normalized is None:
        raise BadUserInput(NOT_A_CODE)
    found = await identity_links.usable_code(db, workspace_id, hash_code(normalized), lock=lock)
    if found is None:
        raise BadUserInput(NOT_A_CODE)
    return found


async def _active_members(
    db: Executor, workspace_id: int, first_id: int, second_id: int
) -> tuple[MemberRow | None, MemberRow | None]:
    """Both members, locked (app.data.identity_links.lock_members); None for one that is
    deactivated or gone."""
    by_id = await identity_links.lock_members(db, workspace_id, first_id, second_id)
    first, second = by_id.get(first_id), by_id.get(second_id)
    return (
        first if first is not None and not first.deactivated else None,
        second if second is not None and not second.deactivated else None,
    )


async def _starters_link(db: Executor, workspace_id: int, member_id: int, link_id: int) -> LinkRow:
    link = await identity_links.starters_link(db, workspace_id, member_id, link_id)
    if link is None:
        raise BadUserInput(UNKNOWN_LINK)
    return link
