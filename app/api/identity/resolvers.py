"""The identity area's reads and writes, as rows: each a call of app.identity.links (which
checks and opens its transaction), with the request's session, reader and settings."""

from __future__ import annotations

from collections.abc import Sequence

from app.api.context import Info
from app.data.identity_links import LinkRow
from app.identity import links
from app.request.ids import expect_id


async def resolve_link_code(info: Info, code: str) -> links.Preview:
    return await links.preview(info.context.db, info.context.reader, code)


async def resolve_start_link(info: Info, namespace: str | None) -> links.LinkCode:
    context = info.context
    return await links.start(context.db, context.reader, context.settings.link_code_ttl, namespace)


async def resolve_confirm_link(info: Info, code: str) -> LinkRow:
    context = info.context
    return await links.confirm(context.db, context.reader, code, context.settings.link_code_ttl)


async def resolve_approve_link(info: Info, id: str) -> LinkRow:
    # An id that is not an IdentityLink's (None) answers as an unknown link.
    return await links.approve(info.context.db, info.context.reader, expect_id(id, "IdentityLink"))


async def resolve_revoke_link(info: Info, id: str) -> LinkRow:
    return await links.revoke(info.context.db, info.context.reader, expect_id(id, "IdentityLink"))


async def viewer_links(info: Info, pks: Sequence[int]) -> list[LinkRow | None]:
    """The links `pks` that are the viewer's own (a member token's); None for any other."""
    reader = info.context.reader
    if reader.kind != "member":
        return [None] * len(pks)
    own = {
        link.id: link
        for link in await info.context.loaders.viewer_links.load(reader.actor_id) or []
    }
    return [own.get(pk) for pk in pks]
