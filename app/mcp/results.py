"""The tools' results as typed models: the SDK derives each tool's output schema from them and
returns them as structured content (and as JSON text for clients without it).

Sized for a model's context: every text is bounded (a search's excerpt or snippet, a
transcript line cut at TEXT_CHARS), every list by its tool's limit (docs/mcp.md, Sizes).
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class Highlight(BaseModel):
    start: int = Field(description="UTF-16 offset in `text` where a query term starts.")
    end: int = Field(description="UTF-16 offset in `text` just past it.")


class FoundMessage(BaseModel):
    message_id: str = Field(description="The Message's global id (the same as GraphQL's).")
    where: str = Field(description="`#general`, `#secret (private)`, `DM`, `thread`.")
    author: str = Field(description="The author's name (`Helper (agent)` for an agent).")
    when: str = Field(description="When it was posted, ISO 8601 in UTC.")
    text: str = Field(
        description="The body, or an excerpt of at most 500 characters around the first match."
    )
    highlights: list[Highlight] = Field(description="Where the query's terms occur in `text`.")


class SearchMessagesResult(BaseModel):
    messages: list[FoundMessage] = Field(description="Matches, newest first.")
    next_cursor: str | None = Field(
        description="Pass as `cursor` (same query and filters) for the next page; null at the end."
    )
    budget_exhausted: bool = Field(
        description="The search stopped at its candidate budget: there may be more matches "
        "further back; continue with next_cursor."
    )


class ConversationMessage(BaseModel):
    message_id: str = Field(description="The Message's global id.")
    author: str = Field(description="The author's name.")
    when: str = Field(description="When it was posted, ISO 8601 in UTC.")
    text: str = Field(description="The body, cut at 1,000 characters (then ending with `…`).")
    is_target: bool = Field(description="The message asked for.")


class ReadConversationResult(BaseModel):
    where: str = Field(description="The conversation: `#general`, `DM`, `thread`.")
    messages: list[ConversationMessage] = Field(
        description="The readable messages around the one asked for, in order."
    )


class StartTurnResult(BaseModel):
    turn: str = Field(
        description="The Turn's global id: pass it as `turn` to search_history and post_reply."
    )


class Neighbor(BaseModel):
    message_id: str = Field(description="The Message's global id.")
    speaker: str | None = Field(description="Who wrote it, when known.")
    when: str = Field(description="When it was posted, ISO 8601 in UTC.")
    text: str = Field(description="The body, or a snippet of about 280 characters.")


class ScoreComponent(BaseModel):
    name: str = Field(description="A ranking feature (docs/relevance.md).")
    value: float = Field(description="Its contribution to `score`.")


class HistoryHit(BaseModel):
    message_id: str = Field(description="The Message's global id.")
    where: str = Field(description="`#general`, `#secret (private)`, `DM with Alice`, ...")
    channel: str | None = Field(
        description="The channel's name (a thread's parent); null for a DM."
    )
    this_conversation: bool = Field(description="Said in the turn's own conversation.")
    when: str = Field(description="When it was posted, ISO 8601 in UTC.")
    ago: str = Field(description="How long before the turn started, e.g. `3 days ago`.")
    speaker: str = Field(description="A stable label: `Sam (sam1)`, `Helper (agent)`.")
    text: str = Field(description="The body, or a snippet of about 280 characters.")
    before: list[Neighbor] = Field(description="Up to two eligible messages just before.")
    after: list[Neighbor] = Field(description="Up to two eligible messages just after.")
    score: float = Field(description="Relevance; comparable within one search only.")
    why: list[ScoreComponent] = Field(description="The ranking features; they sum to `score`.")


class SearchHistoryResult(BaseModel):
    status: str = Field(
        description="`OK`, or `BUDGET_EXHAUSTED` when the turn's evidence ledger is full "
        "(nothing more can be shown: reply with what you have)."
    )
    message_ids: list[str] = Field(
        description="Every message shown (hits and neighbors) in result order: exactly what "
        "joined the turn's evidence."
    )
    count: int = Field(description="Hits in `hits`.")
    hits: list[HistoryHit] = Field(description="The hits, best first.")


class PostReplyResult(BaseModel):
    delivered: bool = Field(description="The reply was posted in the turn's conversation.")
    message_id: str | None = Field(description="The reply's Message id when delivered.")
    withheld_reason: str | None = Field(
        description="Why it was not delivered (its sources may not be shown there)."
    )
