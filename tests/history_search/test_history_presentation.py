"""app.history_search.presentation: how a hit is labelled and snipped for the agent."""

from __future__ import annotations

from datetime import timedelta

import pytest

from app.data.history_search import Person
from app.history_search import presentation
from tests.history_support import NOW, hit_row


def test_where_labels_name_the_room_and_never_only_a_display_name() -> None:
    assert presentation.where_label(hit_row(1)) == "#general"
    assert presentation.where_label(hit_row(1, scope_visibility="shared")) == "#general (shared)"
    thread = hit_row(1, scope_kind="thread", scope_visibility=None, parent_name="general")
    assert presentation.where_label(thread) == "thread in #general"
    assert presentation.channel_name(thread) == "general"
    dm = hit_row(
        1,
        scope_kind="dm",
        scope_visibility=None,
        scope_name=None,
        people=(Person("Sam", "sam1", True), Person("Alice", "alice", False)),
    )
    assert presentation.where_label(dm) == "DM with Sam (sam1), Alice"
    assert presentation.channel_name(dm) is None


def test_speaker_labels_keep_same_named_actors_apart() -> None:
    assert presentation.speaker_label(hit_row(1, author_name_shared=True)) == "Sam (sam1)"
    assert presentation.speaker_label(hit_row(1)) == "Sam"
    agent = hit_row(1, author_name="Helper", author_key="helper", author_kind="agent")
    assert presentation.speaker_label(agent) == "Helper (agent)"


@pytest.mark.parametrize(
    ("delta", "label"),
    [
        (timedelta(seconds=5), "just now"),
        (timedelta(minutes=1), "1 minute ago"),
        (timedelta(hours=5), "5 hours ago"),
        (timedelta(days=3), "3 days ago"),
        (timedelta(days=15), "2 weeks ago"),
        (timedelta(days=70), "2 months ago"),
        (timedelta(days=800), "2 years ago"),
        (timedelta(days=-1), "just now"),
    ],
)
def test_ago_is_relative_to_the_turn(delta: timedelta, label: str) -> None:
    assert presentation.ago(NOW - delta, NOW) == label


def test_snippet_is_the_whole_body_when_short_and_a_window_around_the_match_when_long() -> None:
    assert presentation.snippet("short body", ["body"]) == "short body"
    body = "filler words here " * 40 + "the migration decision was Friday " + "tail text " * 40
    text = presentation.snippet(body, ["migrations"])  # found by its stem's first letters
    assert "migration decision" in text
    assert text.startswith("…") and text.endswith("…")
    assert len(text) <= presentation.SNIPPET_CHARS + 2
    assert presentation.snippet("東京" * 200, ["京都"]).endswith("…")
