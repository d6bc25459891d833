"""Each tool as a call of the domain function its GraphQL twin calls, and its typed result.

search_messages is messageSearch (app.message_search.search), read_conversation is
`node(id).scope.messages(around:)` (app.message_search.transcript), start_turn, search_history and
post_reply are startTurn, historySearch and postReply (app.history_search). Same checks (each domain
function checks its app.access policy first), same limits, same ledger and audit rows, same
pre-delivery recheck. A tool takes no perspective, audience or requester: those come from the
token, or from the turn the agent names (one it started: any other answers like a made-up id).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from app import access
from app.data import directory
from app.data.readers import Reader, reader_for_turn
from app.data.rows import ActorRow, MessageRow, ScopeRow
from app.data.session import Session
from app.errors import BadUserInput, Forbidden
from app.history_search import presentation
from app.history_search.ledger import Ledger
from app.history_search.replies import post_reply as domain_post_reply
from app.history_search.search import HistoryRequest, HitView, history_search
from app.history_search.turns import start_turn as domain_start_turn
from app.mcp import results
from app.message_search import transcript
from app.message_search.keys import Keys
from app.message_search.query import parse_query
from app.message_search.search import (
    AuthorRequest,
    DecodedId,
    MessageSearchRequest,
    message_search,
)
from app.request.ids import decode_id, encode_id
from app.request.loaders import Loaders

# The tools' limits (docs/mcp.md): smaller than GraphQL's where a page must fit a model's
# context; the domain functions check their own limits as well.
SEARCH_DEFAULT, SEARCH_MAX = 20, 50
AROUND_DEFAULT, AROUND_MAX = 5, 50
HISTORY_DEFAULT, HISTORY_MAX = 8, 20
START_WINDOW = 30
TEXT_CHARS = 1000
SPEAKERS = {"anyone": "ANYONE", "requester": "REQUESTER", "you": "YOU"}
# Any turn that is not one this agent started answers exactly like this.
NO_SUCH_TURN = "no turn with that id was started by this agent"


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call's request scope, as a GraphQL request's Context: who asks, its session,
    its loaders (a request-lived cache) and the service's keys."""

    reader: Reader
    db: Session
    keys: Keys
    loaders: Loaders


def _limit(value: int | None, default: int, most: int, name: str, least: int = 1) -> int:
    n = default if value is None else value
    if not least <= n <= most:
        raise BadUserInput(f"{name} must be between {least} and {most}")
    return n


def _decode(value: str) -> tuple[str, int] | None:
    """A global id as (type, pk); None when `value` is not one of Recall's ids."""
    try:
        return decode_id(value)
    except ValueError:
        return None


def _when(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _scope_label(scope: ScopeRow | None) -> str:
    """`#general`, `#secret (private)`, `DM`, `thread`."""
    if scope is None:
        return "unknown"
    if scope.kind == "thread":
        return "thread"
    if scope.kind == "dm":
        return "DM"
    suffix = {"private": " (private)", "shared": " (shared)", "open": " (public)"}
    return f"#{scope.name or scope.key}{suffix.get(scope.visibility or '', '')}"


def _author(actor: ActorRow | None) -> str:
    if actor is None:
        return "unknown"
    return presentation.actor_label(actor.name, actor.key, actor.kind, False)


def _cut(body: str) -> str:
    return body if len(body) <= TEXT_CHARS else body[:TEXT_CHARS].rstrip() + "…"


async def search_messages(
    call: Call,
    *,
    query: str,
    channel: str | None,
    author: str | None,
    since: datetime | None,
    until: datetime | None,
    limit: int | None,
    cursor: str | None,
    time_zone: str = "UTC",
) -> results.SearchMessagesResult:
    first = _limit(limit, SEARCH_DEFAULT, SEARCH_MAX, "limit")
    scope = await _scope_filter(call, channel) if channel is not None else None
    by = await _author_filter(call, author) if author is not None else None
    found = await message_search(
        call.db,
        call.reader,
        MessageSearchRequest(
            query, scope, by, first, cursor, since=since, until=until, time_zone=time_zone
        ),
        keys=call.keys,
        remember=call.loaders.remember_message,
    )
    messages = [
        results.FoundMessage(
            message_id=encode_id("Message", h.message.id),
            where=_scope_label(h.message.scope),
            author=_author(h.message.author),
            when=_when(h.message.created_at),
            text=h.excerpt.text,
            highlights=[results.Highlight(start=s, end=e) for s, e in h.excerpt.highlights],
        )
        for h in found.hits
    ]
    return results.SearchMessagesResult(
        messages=messages,
        next_cursor=found.end_cursor if found.has_next_page else None,
        budget_exhausted=found.budget_exhausted,
    )


async def _scope_filter(call: Call, channel: str) -> DecodedId:
    """A Scope id, or a scope's key. A key that names nothing matches nothing, like an id of
    a scope the reader may not read."""
    decoded = _decode(channel)
    if decoded is not None:
        return DecodedId(*decoded)
    scope_id, _ = await directory.ids_by_keys(
        call.db, call.reader.workspace_id, scope_key=channel, member_key=None
    )
    return DecodedId("Scope", scope_id or 0)


async def _author_filter(call: Call, author: str) -> AuthorRequest:
    """A Member or Agent id, or a member's key."""
    decoded = _decode(author)
    if decoded is not None:
        kind = "agent" if decoded[0] == "Agent" else "member"
        return AuthorRequest(kind, DecodedId(*decoded))
    _, member_id = await directory.ids_by_keys(
        call.db, call.reader.workspace_id, scope_key=None, member_key=author
    )
    return AuthorRequest("member", DecodedId("Member", member_id or 0))


async def read_conversation(
    call: Call, *, message_id: str, before: int | None, after: int | None
) -> results.ReadConversationResult:
    n_before = _limit(before, AROUND_DEFAULT, AROUND_MAX, "before", least=0)
    n_after = _limit(after, AROUND_DEFAULT, AROUND_MAX, "after", least=0)
    decoded = _decode(message_id)
    if decoded is None:
        raise BadUserInput("message_id is not a Message id")
    found = await transcript.conversation(
        call.db,
        call.reader,
        decoded[1] if decoded[0] == "Message" else None,
        n_before=n_before,
        n_after=n_after,
    )
    return results.ReadConversationResult(
        where=_scope_label(found.scope),
        messages=[
            results.ConversationMessage(
                message_id=encode_id("Message", r.id),
                author=_author(r.author),
                when=_when(r.created_at),
                text=_cut(r.body),
                is_target=r.id == found.target_id,
            )
            for r in found.messages
        ],
    )


async def start_turn(
    call: Call,
    *,
    conversation: str,
    requester: str,
    trigger_message: str | None,
    window: int | None,
) -> results.StartTurnResult:
    access.START_TURN.check(call.reader)
    scope = _decode(conversation)
    person = _decode(requester)
    scope_key = None if scope is not None else conversation
    member_key = None if person is not None else requester
    scope_id = scope[1] if scope is not None and scope[0] == "Scope" else None
    requester_id = person[1] if person is not None and person[0] == "Member" else None
    if scope_key is not None or member_key is not None:
        by_scope, by_member = await directory.ids_by_keys(
            call.db, call.reader.workspace_id, scope_key=scope_key, member_key=member_key
        )
        scope_id = by_scope if scope_key is not None else scope_id
        requester_id = by_member if member_key is not None else requester_id
    trigger = None
    if trigger_message is not None:
        decoded = _decode(trigger_message)
        if decoded is None:
            raise BadUserInput("trigger_message is not a Message id")
        # An id of another type names no message: it is in no scope (0 matches nothing).
        trigger = decoded[1] if decoded[0] == "Message" else 0
    started = await domain_start_turn(
        call.db,
        call.reader,
        scope_id=scope_id,
        requester_id=requester_id,
        trigger_message_id=trigger,
        window=START_WINDOW if window is None else window,
    )
    return results.StartTurnResult(turn=encode_id("Turn", started.turn.id))


async def turn_reader(call: Call, turn: str | None) -> Reader:
    """The reader of the turn a call names: a turn token's own turn, or a turn the calling
    agent started. Any other id — another agent's turn, a made-up one, one of another type —
    is FORBIDDEN with the same message, so nothing tells them apart."""
    reader = call.reader
    decoded = _decode(turn) if turn is not None else None
    if turn is not None and (decoded is None or decoded[0] != "Turn"):
        raise Forbidden(NO_SUCH_TURN)
    if reader.kind == "turn":
        if decoded is not None and decoded[1] != reader.turn_id:
            raise Forbidden(NO_SUCH_TURN)
        return reader
    if reader.kind != "agent":
        # The tool's policy refuses it first; the domain function would too.
        access.HISTORY_SEARCH.check(reader)
    if decoded is None:
        raise BadUserInput("turn is required with an agent token (start_turn returns it)")
    found = await reader_for_turn(call.db, reader.workspace_id, reader.actor_id, decoded[1])
    if found is None:
        raise Forbidden(NO_SUCH_TURN)
    return found


async def search_history(
    call: Call,
    *,
    turn: str | None,
    query: str,
    speaker: str | None,
    since: datetime | None,
    until: datetime | None,
    limit: int | None,
) -> results.SearchHistoryResult:
    first = _limit(limit, HISTORY_DEFAULT, HISTORY_MAX, "limit")
    who = SPEAKERS.get((speaker or "anyone").lower())
    if who is None:
        raise BadUserInput("speaker must be anyone, requester or you")
    reader = await turn_reader(call, turn)
    assert reader.turn_id is not None
    found = await history_search(
        call.db,
        reader,
        Ledger(reader.turn_id),
        HistoryRequest(query, who, since, until, first, None),
        keys=call.keys,
    )
    terms = _terms(query)
    hits = [_hit(v, terms) for v in found.hits]
    return results.SearchHistoryResult(
        status=found.status,
        message_ids=[encode_id("Message", i) for i in found.message_ids],
        count=len(hits),
        hits=hits,
    )


def _terms(query: str) -> list[str]:
    return list(parse_query(query).include)


def _neighbor(m: MessageRow, terms: list[str]) -> results.Neighbor:
    return results.Neighbor(
        message_id=encode_id("Message", m.id),
        speaker=_author(m.author) if m.author is not None else None,
        when=_when(m.created_at),
        text=presentation.snippet(m.body, terms),
    )


def _hit(view: HitView, terms: list[str]) -> results.HistoryHit:
    hit = view.shown.hit
    return results.HistoryHit(
        message_id=encode_id("Message", hit.message.id),
        where=view.where,
        channel=view.channel,
        this_conversation=view.this_conversation,
        when=_when(hit.message.created_at),
        ago=view.ago,
        speaker=view.speaker,
        text=view.text,
        before=[_neighbor(m, terms) for m in view.shown.before],
        after=[_neighbor(m, terms) for m in view.shown.after],
        score=hit.score,
        why=[results.ScoreComponent(name=n, value=v) for n, v in hit.components],
    )


async def post_reply(
    call: Call, *, turn: str | None, body: str, client_id: str | None
) -> results.PostReplyResult:
    reader = await turn_reader(call, turn)
    assert reader.turn_id is not None
    outcome = await domain_post_reply(
        call.db, reader, Ledger(reader.turn_id), body=body, client_mutation_id=client_id
    )
    return results.PostReplyResult(
        delivered=outcome.delivered,
        message_id=encode_id("Message", outcome.message.id) if outcome.message else None,
        withheld_reason=outcome.withheld_reason,
    )
