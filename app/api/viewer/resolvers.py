"""Who the token speaks for, as rows: its workspace, its member or its agent."""

from __future__ import annotations

from app.api.context import Info
from app.data import directory
from app.data.rows import ActorRow, WorkspaceRow


async def viewer_workspace(info: Info) -> WorkspaceRow:
    row = await directory.workspace_by_id(info.context.db, info.context.reader.workspace_id)
    assert row is not None
    return row


async def viewer_member(info: Info) -> ActorRow | None:
    reader = info.context.reader
    if reader.kind != "member":
        return None
    return await info.context.loaders.actor_by_id.load(reader.actor_id)


async def viewer_agent(info: Info) -> ActorRow | None:
    reader = info.context.reader
    if reader.agent_id is None:
        return None
    return await info.context.loaders.actor_by_id.load(reader.agent_id)
