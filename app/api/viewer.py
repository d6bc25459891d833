"""The `viewer` root field: who the token speaks for."""

from __future__ import annotations

import strawberry

from app.api.context import Info
from app.api.history import viewer_turn
from app.api.history_types import Turn
from app.api.types import Agent, Member, Workspace
from app.data import directory


@strawberry.type
class Viewer:
    @strawberry.field
    async def workspace(self, info: Info) -> Workspace:
        row = await directory.workspace_by_id(info.context.db, info.context.reader.workspace_id)
        assert row is not None
        return Workspace.of(row)

    @strawberry.field(description="The person behind a member token.")
    async def member(self, info: Info) -> Member | None:
        reader = info.context.reader
        if reader.kind != "member":
            return None
        row = await info.context.loaders.actor_by_id.load(reader.actor_id)
        return Member.of(row) if row else None

    @strawberry.field(description="The agent behind an agent or turn token.")
    async def agent(self, info: Info) -> Agent | None:
        reader = info.context.reader
        if reader.agent_id is None:
            return None
        row = await info.context.loaders.actor_by_id.load(reader.agent_id)
        return Agent.of(row) if row else None

    @strawberry.field(description="The turn behind a turn token.")
    async def turn(self, info: Info) -> Turn | None:
        return await viewer_turn(info)
