"""The hand-written half of the evaluation set (eval/data/stories.json): a payments company's
team chat, story by story. This module only reads it.

Each story is a few messages (incidents with their error strings, decisions and their
reversals, customers, scheduling, CJK lines, DMs with agents) and the queries an agent would
type mid-turn to find them, each graded: 2 = the answer, 1 = useful context. Message keys are
`story.suffix`; a scope `thread:SUFFIX` is the thread rooted at that message of the story.
`eval/generate.py` turns this into a fixture and adds seeded noise.

Query kinds (what each one tests):
  identifier   an error code or a snake/kebab/dotted identifier, and the cause or fix that
               was discussed around it in other words
  rare         one rare, specific word among common ones
  decision     the current state of a decision that changed (the later message is the answer)
  paraphrase   the words of the query are not the words of the answer
  people       a customer, a person, a vendor
  schedule     dates, rotations, deadlines
  cjk          Chinese or Japanese text
  ineligible   the best textual match is in a conversation the turn may not show
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SOURCE = Path(__file__).parent / "data" / "stories.json"


@dataclass(frozen=True)
class M:
    key: str
    scope: str
    author: str
    minute: int
    body: str
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class Q:
    text: str
    kind: str
    turn: str
    grades: dict[str, int]


@dataclass(frozen=True)
class Story:
    key: str
    days_ago: float
    messages: list[M]
    queries: list[Q] = field(default_factory=list)


def _story(data: dict[str, Any]) -> Story:
    return Story(
        data["key"],
        data["days_ago"],
        [
            M(
                m["key"],
                m["scope"],
                m["author"],
                m["minute"],
                m["body"],
                tuple(m.get("sources", ())),
            )
            for m in data["messages"]
        ],
        [Q(q["text"], q["kind"], q["turn"], q["grades"]) for q in data["queries"]],
    )


_DATA = json.loads(SOURCE.read_text(encoding="utf-8"))

# People (key: name), agents (key: (name, owner)), channels (key: visibility and members), DMs
# (key: members) and the turns queries are asked in (key: (agent, scope, requester)).
MEMBERS: dict[str, str] = _DATA["members"]
AGENTS: dict[str, tuple[str, str]] = {
    key: (a["name"], a["owner"]) for key, a in _DATA["agents"].items()
}
SCOPES: dict[str, dict[str, object]] = _DATA["scopes"]
DMS: dict[str, list[str]] = _DATA["dms"]
TURNS: dict[str, tuple[str, str, str]] = {
    key: (t["agent"], t["scope"], t["requester"]) for key, t in _DATA["turns"].items()
}
STORIES: list[Story] = [_story(s) for s in _DATA["stories"]]
