"""The identity area's object types (docs/identity.md): a person's identity (Member: a member
of one namespace), the links between two of them, and the code that starts one. Member and
IdentityLink name each other, so they share this module."""

from __future__ import annotations

from datetime import datetime
from enum import Enum

import strawberry

from app.api.context import Info
from app.api.node import Node
from app.api.policies import PARENT, Fixed, guarded
from app.data.identity_links import LinkRow
from app.data.rows import ActorRow
from app.identity.links import LinkCode, Preview
from app.request.ids import encode_id

# A person has at most one live link into each other namespace; the cost model counts a few.
LINKS_LISTED = 10


@strawberry.type(description="A person of the workspace.")
class Member(Node):
    key: str = strawberry.field(
        description="The connector's id for the person (fixture key), unique in the workspace."
    )
    name: str = strawberry.field(
        description="Display name; not unique (two people may share a name)."
    )
    pk: strawberry.Private[int]
    namespace_id: strawberry.Private[int | None]

    @guarded(
        "The connector namespace this identity belongs to (`type:name`, e.g. `slack:acme`). "
        "One person may be a member in several namespaces of a workspace (docs/identity.md).",
        access=PARENT,
    )
    async def namespace(self, info: Info) -> str:
        if self.namespace_id is None:
            return ""
        return await info.context.loaders.namespace_name.load(self.namespace_id) or ""

    @guarded(
        "The viewer's own identity links — pending, live, revoked and expired (status) — on the "
        "viewer's own member and on a member linked to it; empty on anyone else and for other "
        "tokens.",
        access=PARENT,
        size=Fixed(LINKS_LISTED),
    )
    async def identity_links(self, info: Info) -> list[IdentityLink]:
        links = await info.context.loaders.viewer_links.load(self.pk)
        return [IdentityLink.of(link) for link in links or []]

    @classmethod
    def of(cls, row: ActorRow) -> Member:
        return cls(
            id=encode_id("Member", row.id),
            key=row.key,
            name=row.name,
            pk=row.id,
            namespace_id=row.namespace_id,
        )


@strawberry.enum(description="Where an identity link stands (docs/identity.md).")
class IdentityLinkStatus(Enum):
    PENDING = strawberry.enum_value(
        "PENDING",
        description="Confirmed by the second identity, waiting for the one who started the code "
        "to approve it (approveIdentityLink) before approveBefore. Opens nothing.",
    )
    LIVE = strawberry.enum_value(
        "LIVE", description="Approved and not revoked: opens its one path (approvedAt)."
    )
    REVOKED = strawberry.enum_value(
        "REVOKED",
        description="Revoked or declined by either member, or by the connector (revokedAt). "
        "Opens nothing, ever again.",
    )
    EXPIRED = strawberry.enum_value(
        "EXPIRED",
        description="Pending and not approved in time. Opens nothing, ever; start a new code.",
    )


@strawberry.type(
    description="A link between two identities (members of two namespaces) of one person: the "
    "second confirmed a code the first started, and the first approved the second by name. "
    "While live it opens exactly one path: what only one of them may read follows that person "
    "into what only the other reads (docs/identity.md). Never deleted: a revoked link keeps "
    "its history."
)
class IdentityLink(Node):
    status: IdentityLinkStatus = strawberry.field(
        description="PENDING until the starter approves it; only a LIVE link opens anything."
    )
    verified_at: datetime = strawberry.field(
        description="When the second identity confirmed the code (the link was made, pending). "
        "It is live from approvedAt, not from this."
    )
    approved_at: datetime | None = strawberry.field(
        description="When the identity that started the code approved the one that confirmed "
        "it: the link is live from then on. Null while pending, and for a link declined or "
        "expired before it was approved."
    )
    approve_before: datetime | None = strawberry.field(
        description="Until when a pending link may be approved (one code lifetime after it "
        "was confirmed); null once approved."
    )
    revoked_at: datetime | None = strawberry.field(
        description="When it was revoked or declined (by either member or the connector); "
        "null otherwise."
    )
    member_ids: strawberry.Private[tuple[int, int]]

    @guarded(
        "The two members it joins: the one who started it (and approves it), then the one "
        "who confirmed it.",
        access=PARENT,
        size=Fixed(2),
    )
    async def members(self, info: Info) -> list[Member]:
        rows = await info.context.loaders.actor_by_id.load_many(list(self.member_ids))
        return [Member.of(r) for r in rows if r is not None]

    @classmethod
    def of(cls, row: LinkRow) -> IdentityLink:
        return cls(
            id=encode_id("IdentityLink", row.id),
            status=IdentityLinkStatus[row.status.upper()],
            verified_at=row.verified_at,
            approved_at=row.approved_at,
            approve_before=row.approve_before,
            revoked_at=row.revoked_at,
            member_ids=(row.member_a, row.member_b),
        )


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

    @classmethod
    def of(cls, code: LinkCode) -> IdentityLinkCode:
        return cls(code=code.code, expires_at=code.expires_at)


@strawberry.type(
    description="Whom a link code would link you to: shown before confirmIdentityLink, so that "
    "you link only your own identities."
)
class IdentityLinkCodePreview:
    starter: Member = strawberry.field(
        description="The identity that started the code (its name, key and namespace)."
    )
    expires_at: datetime = strawberry.field(description="When the code stops working.")

    @classmethod
    def of(cls, preview: Preview) -> IdentityLinkCodePreview:
        return cls(starter=Member.of(preview.starter), expires_at=preview.expires_at)
