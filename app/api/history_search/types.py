"""The object types of historySearch, turns and replies (docs/api.md). Hits arrive hydrated
(app.history_search.search) and become plain attributes; only a turn's relations read further,
through app.api.history_search.resolvers."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any

import strawberry

from app.api.context import Info
from app.api.directory.resolvers import load_actor
from app.api.directory.types import Message, Scope, scope_of
from app.api.history_search import resolvers
from app.api.identity.types import Member
from app.api.node import Node
from app.api.pagination import PageInfo
from app.api.policies import PARENT, PER_ITEM, Fixed, guarded, sized
from app.data.turns import AuditRow, TurnRow
from app.history_search.ledger import CEILING
from app.history_search.search import MAX_FIRST, HistoryResult, HitView
from app.request.ids import encode_id

# The audit rows a turn lists, as the cost model counts them: a turn searches a few times.
SEARCHES_LISTED = 20


@strawberry.enum(description="Whose messages historySearch returns.")
class Speaker(Enum):
    ANYONE = strawberry.enum_value("ANYONE", description="Messages by anyone (the default).")
    REQUESTER = strawberry.enum_value(
        "REQUESTER", description="Only messages the turn's requester wrote."
    )
    YOU = strawberry.enum_value("YOU", description="Only the agent's own messages.")


@strawberry.enum(description="Whether a historySearch could show anything.")
class HistorySearchStatus(Enum):
    OK = strawberry.enum_value("OK", description="The search ran; its hits are on the page.")
    BUDGET_EXHAUSTED = strawberry.enum_value(
        "BUDGET_EXHAUSTED",
        description=f"The turn's evidence ledger is full ({CEILING} messages): the page is empty and "
        "further searches of this turn show nothing. Reply with what you have.",
    )


@strawberry.type(description="One ranking feature of a hit; a hit's components sum to its score.")
class ScoreComponent:
    name: str = strawberry.field(
        description=(
            "`lexical`, `context`, `supersedes`, `asks`, `recency` or `same_conversation`"
            " (docs/relevance.md says what each measures)."
        )
    )
    value: float = strawberry.field(description="Its contribution to the score: 0 or more.")


def _doc(text: str) -> Any:
    return strawberry.field(description=text)


@strawberry.enum(description="What a hit matched; hits are ordered by it, then by score.")
class HistoryMatch(Enum):
    EXACT = strawberry.enum_value(
        "EXACT",
        description="The message holds the query verbatim: all of it (several words), or "
        "every word of it with each identifier and phrase as written.",
    )
    WORDS = strawberry.enum_value("WORDS", description="The message holds some of its words.")
    CONTEXT = strawberry.enum_value(
        "CONTEXT",
        description="None of its words: the conversation around one of the best matches. "
        "Ranked below every match, and only when the matches are few.",
    )


@strawberry.type(description="A message found by historySearch, with the exchange around it.")
class HistoryHit:
    message: Message = _doc("The message found.")
    where: str = _doc("`#general`, `#secret (private)`, `DM with Alice`, `thread in #general`.")
    channel: str | None = _doc("The channel's name (a thread's parent); null for a DM.")
    this_conversation: bool = _doc("Said in the turn's own conversation (or its threads).")
    when: datetime = _doc("When the message was posted (its createdAt).")
    ago: str = _doc("How long before the turn started, e.g. `3 days ago`.")
    speaker: str = _doc("A stable label: `Sam (sam1)` when names collide, `Helper (agent)`.")
    text: str = _doc("The body, or a snippet around the first match when the body is long.")
    before: list[Message] = sized(
        "Up to two eligible messages just before, oldest first.", Fixed(2)
    )
    after: list[Message] = sized(
        "Up to two eligible messages just after, oldest first: the next in its conversation, "
        "or, when it starts a thread, the thread's first replies.",
        Fixed(2),
    )
    match: HistoryMatch = _doc("What it matched: hits are ordered by this first.")
    score: float = _doc(
        "Relevance within its `match`; higher is better. Hits are ordered by `match`, then by "
        "score. Comparable within one search only."
    )
    why: list[ScoreComponent] = sized("The ranking features; they sum to `score`.", PER_ITEM)


@strawberry.type(description="One historySearch hit with its cursor.")
class HistoryHitEdge:
    cursor: str = strawberry.field(
        description="Opaque position of this hit in the ranked result (bound to the turn and "
        "the search's arguments)."
    )
    node: HistoryHit = strawberry.field(description="The hit.")

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
            match=HistoryMatch(hit.match),
            score=hit.score,
            why=[ScoreComponent(name=n, value=v) for n, v in hit.components],
        )
        return cls(cursor=view.cursor, node=node)


@strawberry.type(description="A page of historySearch hits, best first.")
class HistorySearchConnection:
    status: HistorySearchStatus = strawberry.field(
        description="OK, or BUDGET_EXHAUSTED when the turn's evidence ledger is full."
    )
    message_ids: list[strawberry.ID] = sized(
        "Every message shown (hits and neighbors) in result order: exactly what joined the "
        "turn's evidence.",
        Fixed(5 * MAX_FIRST),
    )
    count: int = strawberry.field(description="Hits on this page.")
    edges: list[HistoryHitEdge] = sized("The hits, best first.", PER_ITEM)
    page_info: PageInfo = strawberry.field(
        description="Pass endCursor as `after` (same query, speaker, since, until) for more."
    )

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
    "removed it. A search examines the newest matches in the agent's conversations, up to a "
    "window, and every match of the query's rarest words; `complete` is false when there were "
    "more matches than it examined."
)
class ExclusionCounts:
    already_in_context: int = strawberry.field(
        description="The trigger message or the turn's loaded window: already in the agent's "
        "context."
    )
    no_evidence: int = strawberry.field(
        description="No source evidence (deleted, or imported with evidence false)."
    )
    audience: int = strawberry.field(
        description="Not readable by the turn's destination (its audience is narrower)."
    )
    lineage: int = strawberry.field(
        description="An agent reply built from something the destination may not read."
    )
    below_cutoff: int = strawberry.field(
        description="Eligible, but ranked below the page (or past the ledger's room)."
    )
    examined: int = strawberry.field(
        description="Matches examined (the window's and the rarest words')."
    )
    complete: bool = strawberry.field(description="Every match was examined.")


@strawberry.type(description="A hit a search showed, as audited.")
class AuditedHit:
    message_id: strawberry.ID = strawberry.field(description="The Message id shown.")
    score: float = strawberry.field(description="Its score in that search.")
    why: list[ScoreComponent] = sized("The components of the score.", PER_ITEM)


@strawberry.type(description="The audit row of one historySearch (never the query text).")
class SearchAudit:
    query_digest: str = strawberry.field(
        description="Hex HMAC-SHA256 of the normalized query under the service's key; empty "
        "when the service has no master key. Equal digests mean the same query."
    )
    status: str = strawberry.field(description="`OK` or `BUDGET_EXHAUSTED`, as answered.")
    speaker: str = strawberry.field(description="The speaker filter: `ANYONE`, `REQUESTER`, `YOU`.")
    since: str | None = strawberry.field(
        description="The since bound as given (ISO 8601; UTC when given without a zone), or null."
    )
    until: str | None = strawberry.field(
        description="The until bound as given (ISO 8601; UTC when given without a zone), or null."
    )
    selected: list[AuditedHit] = sized("The hits shown, in order.", PER_ITEM)
    exclusions: ExclusionCounts = strawberry.field(
        description="What the search examined and why matches were left out."
    )
    created_at: datetime = strawberry.field(description="When the search ran.")

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
                # Audit rows before the window had two parts said it by the count alone.
                complete=bool(x.get("complete", x["examined"] < x["window"])),
            ),
            created_at=row.created_at,
        )


@strawberry.type(description="An agent's turn: only the agent's own turn token reads it.")
class Turn(Node):
    created_at: datetime = strawberry.field(
        description="When the turn started; `ago` and recency are measured from it."
    )
    pk: strawberry.Private[int]
    scope_id: strawberry.Private[int]
    requester_id: strawberry.Private[int]

    @guarded("The conversation the turn answers in.", access=PARENT)
    async def scope(self, info: Info) -> Scope:
        return await scope_of(info, self.scope_id)

    @guarded("The person the agent is answering (speaker REQUESTER).", access=PARENT)
    async def requester(self, info: Info) -> Member:
        return Member.of(await load_actor(info, self.requester_id))

    @guarded(
        "Every message this turn's searches showed (its ledger).",
        access=PARENT,
        size=Fixed(CEILING),
    )
    async def evidence(self, info: Info) -> list[Message]:
        return [Message.of(r) for r in await resolvers.turn_evidence(info, self.pk)]

    @guarded(
        "The audit rows of this turn's searches, oldest first.",
        access=PARENT,
        size=Fixed(SEARCHES_LISTED),
    )
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


@strawberry.type(description="A started turn and the token to act in it.")
class StartTurnResult:
    turn: Turn = strawberry.field(description="The new turn.")
    token: str = strawberry.field(
        description="A turn token (`rct_…`), shown once: send it as `Authorization: Bearer` "
        "for historySearch and postReply in this turn."
    )


@strawberry.type(description="The outcome of postReply.")
class ReplyResult:
    delivered: bool = strawberry.field(
        description="The reply was posted. False: it was not kept (see withheldReason)."
    )
    message: Message | None = strawberry.field(
        description="The posted reply when delivered; null otherwise."
    )
    withheld_reason: str | None = strawberry.field(
        description="Why the reply was not posted: its sources may not be shown in the turn's "
        "conversation. Null when delivered."
    )
    replayed: bool = strawberry.field(
        default=False,
        description="True when this answers a retry (the same clientMutationId): nothing new "
        "was posted.",
    )
