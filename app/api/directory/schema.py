"""How the root fields `node` / `nodes` (app.api.viewer) reach the directory's objects: one
batch per type, filtered by the reader. The directory has no root field of its own; its objects
hang off `viewer`, `node` and the other areas' results."""

from __future__ import annotations

from collections.abc import Sequence

from app.api.context import Info
from app.api.directory import resolvers
from app.api.directory.types import Agent, Message, Scope, Workspace
from app.api.identity.types import Member
from app.api.node import Node


async def resolve_workspaces(info: Info, pks: Sequence[int]) -> list[Node | None]:
    return [Workspace.of(r) if r else None for r in await resolvers.workspaces_by_ids(info, pks)]


async def resolve_scopes(info: Info, pks: Sequence[int]) -> list[Node | None]:
    return [Scope.of(r) if r else None for r in await resolvers.readable_scopes_by_ids(info, pks)]


async def resolve_members(info: Info, pks: Sequence[int]) -> list[Node | None]:
    rows = await resolvers.actors_by_ids(info, "member", pks)
    return [Member.of(r) if r else None for r in rows]


async def resolve_agents(info: Info, pks: Sequence[int]) -> list[Node | None]:
    return [Agent.of(r) if r else None for r in await resolvers.actors_by_ids(info, "agent", pks)]


async def resolve_messages(info: Info, pks: Sequence[int]) -> list[Node | None]:
    rows = await resolvers.readable_messages_by_ids(info, pks)
    return [Message.of(r) if r else None for r in rows]
