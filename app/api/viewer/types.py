"""The `viewer` object: who the token speaks for."""

from __future__ import annotations

import strawberry

from app.api.context import Info
from app.api.directory.types import Agent, Workspace
from app.api.history_search.schema import viewer_turn
from app.api.history_search.types import Turn
from app.api.identity.types import Member
from app.api.policies import PARENT, guarded
from app.api.viewer import resolvers


@strawberry.type(
    description="Who the token speaks for. Which of member, agent and turn are set depends on "
    "the token kind."
)
class Viewer:
    @guarded("The token's workspace.", access=PARENT)
    async def workspace(self, info: Info) -> Workspace:
        return Workspace.of(await resolvers.viewer_workspace(info))

    @guarded("The person behind a member token; null for other tokens.", access=PARENT)
    async def member(self, info: Info) -> Member | None:
        row = await resolvers.viewer_member(info)
        return Member.of(row) if row else None

    @guarded("The agent behind an agent or turn token; null for other tokens.", access=PARENT)
    async def agent(self, info: Info) -> Agent | None:
        row = await resolvers.viewer_agent(info)
        return Agent.of(row) if row else None

    @guarded("The turn behind a turn token; null for other tokens.", access=PARENT)
    async def turn(self, info: Info) -> Turn | None:
        return await viewer_turn(info)
