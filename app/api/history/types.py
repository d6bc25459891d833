"""The object types of historySearch, turns and replies (docs/api.md). Hits arrive hydrated
(app.history.search) and become plain attributes; only a turn's relations read further,
through app.api.history.resolvers."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any

import strawberry

from app.api.context import Info
from app.api.directory.resolvers import load_actor
from app.api.directory.types import Member, Message, Scope, scope_of
from app.api.history import resolvers
from app.api.ids import encode_id
from app.api.node import Node
from app.api.pagination import PageInfo
from app.data.turns import AuditRow, TurnRow
from app.history.search import HistoryResult, HitView


@strawberry.enum(description="Whose messages historySearch returns.")
class Speaker(Enum):
    ANYONE = "ANYONE"
    REQUESTER = "REQUESTER"
    YOU = "YOU"


@strawberry.enum
class HistorySearchStatus(Enum):
    OK = "OK"
    BUDGET_EXHAUSTED = "BUDGET_EXHAUSTED"


@strawberry.type(description="One ranking feature of a hit; a hit's components sum to its score.")
class ScoreComponent:
    name: str
    value: float


def _doc(text: str) -> Any:
    return strawberry.field(description=text)


@strawberry.type(description="A message found by historySearch, with the exchange around it.")
class HistoryHit:
    message: Message
    where: str = _doc("`#general`, `#secret (private)`, `DM with Alice`, `thread in #general`.")
    channel: str | None = _doc("The channel's name (a thread's parent); null for a DM.")
    this_conversation: bool = _doc("Said in the turn's own conversation (or its threads).")
    when: datetime
    ago: str = _doc("How long before the turn started, e.g. `3 days ago`.")
    speaker: str = _doc("A stable label: `Sam (sam1)` when names collide, `Helper (agent)`.")
    text: str = _doc("The body, or a snippet around the first match when the body is long.")
    before: list[Message] = _doc("Up to two eligible messages just before, oldest first.")
    after: list[Message] = _doc("Up to two eligible messages just after, oldest first.")
    score: float
    why: list[ScoreComponent] = _doc("The ranking features; they sum to `score`.")


@strawberry.type
class HistoryHitEdge:
    cursor: str
    node: HistoryHit

    @classmethod
    def of(cls, view: HitView) -> HistoryHitEdge:
        hit = view.shown.hit
        node = HistoryHit(
            message=Message.of(hit.message),
            where=view.where,
            channel=view.channel,
            this_conversation=view.this_conversation,
            when=hit.message.created_at,
            ago=view.ago,
            speaker=view.speaker,
            text=view.text,
            before=[Message.of(m) for m in view.shown.before],
            after=[Message.of(m) for m in view.shown.after],
            score=hit.score,
            why=[ScoreComponent(name=n, value=v) for n, v in hit.components],
        )
        return cls(cursor=view.cursor, node=node)


@strawberry.type
class HistorySearchConnection:
    status: HistorySearchStatus
    message_ids: list[strawberry.ID] = strawberry.field(
        description="Every message shown (hits and neighbors) in result order: exactly what "
        "joined the turn's evidence."
    )
    count: int = strawberry.field(description="Hits on this page.")
    edges: list[HistoryHitEdge]
    page_info: PageInfo

    @classmethod
    def of(cls, result: HistoryResult) -> HistorySearchConnection:
        edges = [HistoryHitEdge.of(v) for v in result.hits]
        return cls(
            status=HistorySearchStatus(result.status),
            message_ids=[encode_id("Message", i) for i in result.message_ids],
            count=len(edges),
            edges=edges,
            page_info=PageInfo(has_next_page=result.has_next_page, end_cursor=result.end_cursor),
        )


@strawberry.type(
    description="Matches the search examined, each counted once under the first rule that "
    "removed it. A search examines the newest matches in the agent's perspective, up to a "
    "window; `complete` is false when there were more matches than the window."
)
class ExclusionCounts:
    already_in_context: int
    no_evidence: int
    audience: int
    lineage: int
    below_cutoff: int
    examined: int = strawberry.field(description="Matches examined, newest first.")
    complete: bool = strawberry.field(description="Every match was examined.")


@strawberry.type
class AuditedHit:
    message_id: strawberry.ID
    score: float
    why: list[ScoreComponent]


@strawberry.type(description="The audit row of one historySearch (never the query text).")
class SearchAudit:
    query_digest: str
    status: str
    speaker: str
    since: str | None
    until: str | None
    selected: list[AuditedHit]
    exclusions: ExclusionCounts
    created_at: datetime

    @classmethod
    def of(cls, row: AuditRow) -> SearchAudit:
        f, x = row.filters, row.exclusions
        return cls(
            query_digest=row.query_digest,
            status=str(f["status"]),
            speaker=str(f["speaker"]),
            since=f["since"],
            until=f["until"],
            selected=[
                AuditedHit(
                    message_id=encode_id("Message", int(s["message_id"])),
                    score=float(s["score"]),
                    why=[ScoreComponent(name=k, value=float(v)) for k, v in s["why"].items()],
                )
                for s in row.selected
            ],
            exclusions=ExclusionCounts(
                already_in_context=x["already_in_context"],
                no_evidence=x["no_evidence"],
                audience=x["audience"],
                lineage=x["lineage"],
                below_cutoff=x["below_cutoff"],
                examined=x["examined"],
                complete=x["examined"] < x["window"],
            ),
            created_at=row.created_at,
        )


@strawberry.type(description="An agent's turn: only the agent's own turn token reads it.")
class Turn(Node):
    created_at: datetime
    pk: strawberry.Private[int]
    scope_id: strawberry.Private[int]
    requester_id: strawberry.Private[int]

    @strawberry.field
    async def scope(self, info: Info) -> Scope:
        return await scope_of(info, self.scope_id)

    @strawberry.field
    async def requester(self, info: Info) -> Member:
        return Member.of(await load_actor(info, self.requester_id))

    @strawberry.field(description="Every message this turn's searches showed (its ledger).")
    async def evidence(self, info: Info) -> list[Message]:
        return [Message.of(r) for r in await resolvers.turn_evidence(info, self.pk)]

    @strawberry.field(description="The audit rows of this turn's searches, oldest first.")
    async def searches(self, info: Info) -> list[SearchAudit]:
        return [SearchAudit.of(r) for r in await resolvers.turn_audits(info, self.pk)]

    @classmethod
    def of(cls, row: TurnRow) -> Turn:
        return cls(
            id=encode_id("Turn", row.id),
            created_at=row.created_at,
            pk=row.id,
            scope_id=row.scope_id,
            requester_id=row.requester_id,
        )


@strawberry.type
class StartTurnResult:
    turn: Turn
    token: str


@strawberry.type
class ReplyResult:
    delivered: bool
    message: Message | None
    withheld_reason: str | None
    replayed: bool = strawberry.field(
        default=False,
        description="True when this answers a retry (the same clientMutationId): nothing new "
        "was posted.",
    )
