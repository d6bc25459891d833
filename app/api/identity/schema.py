"""startIdentityLink, confirmIdentityLink, approveIdentityLink and revokeIdentityLink: one person
proves two of their identities live, one member token each, and the identity that started the
code approves the one that confirmed it (docs/identity.md). Root fields only convert;
app.data.identity_links does the work, each mutation in one transaction."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Annotated

import strawberry

from app import access
from app.api.context import Info
from app.api.directory.resolvers import load_actor
from app.api.directory.types import IdentityLink, Member
from app.api.node import Node
from app.api.policies import guarded
from app.data import identity_links
from app.data.executor import Executor
from app.data.identity_links import LinkRow
from app.errors import BadUserInput
from app.request.ids import expect_id


@strawberry.type(description="A code that links this identity to another of the same person.")
class IdentityLinkCode:
    code: str = strawberry.field(
        description="Short and single-use: confirm it with the other identity's member token "
        "(confirmIdentityLink), then approve that identity here (approveIdentityLink). Case "
        "and dashes do not matter."
    )
    expires_at: datetime = strawberry.field(
        description="When it stops working (ten minutes after it was started)."
    )


@strawberry.type(
    description="Whom a link code would link you to: shown before confirmIdentityLink, so that "
    "you link only your own identities."
)
class IdentityLinkCodePreview:
    starter: Member = strawberry.field(
        description="The identity that started the code (its name, key and namespace)."
    )
    expires_at: datetime = strawberry.field(description="When the code stops working.")


@strawberry.type
class IdentityQuery:
    @guarded(
        "Whom a link code was started by, without using it: show it to the person before they "
        "confirm (confirmIdentityLink), so that nobody links themselves to a stranger who "
        "handed them a code. BAD_USER_INPUT for every code confirmIdentityLink would call "
        "unknown, and for your own.",
        access=access.PREVIEW_IDENTITY_LINK,
    )
    async def identity_link_code(
        self,
        info: Info,
        code: Annotated[
            str, strawberry.argument(description="The code startIdentityLink answered.")
        ],
    ) -> IdentityLinkCodePreview:
        reader = info.context.reader
        access.PREVIEW_IDENTITY_LINK.check(reader)
        starter_id, expires_at = await identity_links.code_starter(
            info.context.db, reader.workspace_id, reader.actor_id, code
        )
        starter = await load_actor(info, starter_id)
        return IdentityLinkCodePreview(starter=Member.of(starter), expires_at=expires_at)


@strawberry.type
class IdentityMutation:
    @guarded(
        "Start linking this identity to another of yours: a short single-use code that your "
        "other identity confirms within ten minutes; the link is live only once you approve "
        "the identity that confirmed it (approveIdentityLink). Starting a new code cancels your "
        "unused ones. BAD_USER_INPUT for a namespace that is not another of the workspace's.",
        access=access.START_IDENTITY_LINK,
    )
    async def start_identity_link(
        self,
        info: Info,
        namespace: Annotated[
            str | None,
            strawberry.argument(
                description="The namespace (`type:name`, e.g. `web:acme`) of the identity you "
                "will confirm it with: an identity of any other namespace is refused. Default: "
                "any namespace other than this identity's."
            ),
        ] = None,
    ) -> IdentityLinkCode:
        reader = info.context.reader
        access.START_IDENTITY_LINK.check(reader)
        db = info.context.db
        async with db.transaction():
            code = await identity_links.start_link(
                db,
                reader.workspace_id,
                reader.actor_id,
                info.context.settings.link_code_ttl,
                namespace,
            )
        return IdentityLinkCode(code=code.code, expires_at=code.expires_at)

    @guarded(
        "Confirm a code started by another identity of yours, with this identity's token: a "
        "PENDING link, which opens nothing until the identity that started the code approves "
        "this one (approveIdentityLink) within ten minutes. The code is used. BAD_USER_INPUT, "
        "changing nothing (the code stays usable), for an unknown, expired or used code, a code "
        "you started yourself, an identity of the same namespace, of a namespace the code is "
        "not for, or of another workspace, or when either identity already has a live or "
        "pending link into the other's namespace.",
        access=access.CONFIRM_IDENTITY_LINK,
    )
    async def confirm_identity_link(
        self,
        info: Info,
        code: Annotated[
            str, strawberry.argument(description="The code startIdentityLink answered.")
        ],
    ) -> IdentityLink:
        reader = info.context.reader
        access.CONFIRM_IDENTITY_LINK.check(reader)
        db = info.context.db
        async with db.transaction():
            link = await identity_links.confirm_link(
                db, reader.workspace_id, reader.actor_id, code, info.context.settings.link_code_ttl
            )
        return IdentityLink.of(link)

    @guarded(
        "Approve the identity that confirmed your code (shown by name, key and namespace in "
        "IdentityLink.members): the link is live from the next request on. Only the identity "
        "that started the code may; approving a live link again answers it as it is. "
        "BAD_USER_INPUT for a link you did not start, exactly as for one that does not exist, "
        "and for one that was declined, revoked or expired.",
        access=access.APPROVE_IDENTITY_LINK,
    )
    async def approve_identity_link(
        self,
        info: Info,
        id: Annotated[strawberry.ID, strawberry.argument(description="The IdentityLink's id.")],
    ) -> IdentityLink:
        return await _on_own_link(
            info, id, access.APPROVE_IDENTITY_LINK, identity_links.approve_link
        )

    @guarded(
        "Revoke one of your identity links (either identity may), or decline a pending one: it "
        "opens nothing from the next request on, and a reply drafted from what only it allowed "
        "is withheld. Revoking again answers the link as it is. BAD_USER_INPUT for a link that "
        "is not yours, exactly as for one that does not exist.",
        access=access.REVOKE_IDENTITY_LINK,
    )
    async def revoke_identity_link(
        self,
        info: Info,
        id: Annotated[strawberry.ID, strawberry.argument(description="The IdentityLink's id.")],
    ) -> IdentityLink:
        return await _on_own_link(info, id, access.REVOKE_IDENTITY_LINK, identity_links.revoke_link)


async def _on_own_link(
    info: Info,
    id: strawberry.ID,
    policy: access.Policy,
    act: Callable[[Executor, int, int, int], Awaitable[LinkRow]],
) -> IdentityLink:
    """Approve or revoke one of the viewer's links, in one transaction; an id that is not an
    IdentityLink's answers as an unknown link."""
    reader = info.context.reader
    policy.check(reader)
    pk = expect_id(id, "IdentityLink")
    if pk is None:
        raise BadUserInput(identity_links.UNKNOWN_LINK)
    db = info.context.db
    async with db.transaction():
        link = await act(db, reader.workspace_id, reader.actor_id, pk)
    return IdentityLink.of(link)


async def resolve_links(info: Info, pks: Sequence[int]) -> list[Node | None]:
    """node(id:) of an IdentityLink: the viewer's own links only; any other is null."""
    reader = info.context.reader
    if reader.kind != "member":
        return [None] * len(pks)
    own = {
        link.id: link
        for link in await info.context.loaders.viewer_links.load(reader.actor_id) or []
    }
    return [IdentityLink.of(own[pk]) if pk in own else None for pk in pks]
