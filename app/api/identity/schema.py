"""startIdentityLink, confirmIdentityLink, approveIdentityLink and revokeIdentityLink: one person
proves two of their identities live, one member token each, and the identity that started the
code approves the one that confirmed it (docs/identity.md). Root fields only convert;
app.identity.links does the work: the checks, and each mutation's one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import strawberry

from app import access
from app.api.context import Info
from app.api.identity import resolvers
from app.api.identity.types import IdentityLink, IdentityLinkCode, IdentityLinkCodePreview
from app.api.node import Node
from app.api.policies import guarded


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
        return IdentityLinkCodePreview.of(await resolvers.resolve_link_code(info, code))


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
        return IdentityLinkCode.of(await resolvers.resolve_start_link(info, namespace))

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
        return IdentityLink.of(await resolvers.resolve_confirm_link(info, code))

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
        return IdentityLink.of(await resolvers.resolve_approve_link(info, id))

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
        return IdentityLink.of(await resolvers.resolve_revoke_link(info, id))


async def resolve_links(info: Info, pks: Sequence[int]) -> list[Node | None]:
    """node(id:) of an IdentityLink: the viewer's own links only; any other is null."""
    return [IdentityLink.of(r) if r else None for r in await resolvers.viewer_links(info, pks)]
