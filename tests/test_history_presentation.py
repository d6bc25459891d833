"""Pure parts of historySearch: labels, snippets, the ledger's arithmetic and cursors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.data.history_neighbors import Neighbors
from app.data.history_search import HitRow, Person
from app.data.rows import MessageRow
from app.errors import InvalidCursor
from app.history import cursor, presentation
from app.history.ledger import CEILING, Ledger

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _message(pk: int, body: str = "hello") -> MessageRow:
    return MessageRow(pk, f"m{pk}", 1, pk, pk, 1, body, NOW)


def _hit(pk: int, **labels: object) -> HitRow:
    fields: dict[str, object] = {
        "author_name": "Sam",
        "author_key": "sam1",
        "author_kind": "member",
        "author_name_shared": False,
        "scope_kind": "channel",
        "scope_visibility": "public",
        "scope_name": "general",
        "parent_name": None,
        "people": (),
    }
    fields.update(labels)
    return HitRow(_message(pk), (("lexical", 0.1),), 0.1, False, **fields)  # type: ignore[arg-type]


def test_where_labels_name_the_room_and_never_only_a_display_name() -> None:
    assert presentation.where_label(_hit(1)) == "#general"
    assert presentation.where_label(_hit(1, scope_visibility="shared")) == "#general (shared)"
    thread = _hit(1, scope_kind="thread", scope_visibility=None, parent_name="general")
    assert presentation.where_label(thread) == "thread in #general"
    assert presentation.channel_name(thread) == "general"
    dm = _hit(
        1,
        scope_kind="dm",
        scope_visibility=None,
        scope_name=None,
        people=(Person("Sam", "sam1", True), Person("Alice", "alice", False)),
    )
    assert presentation.where_label(dm) == "DM with Sam (sam1), Alice"
    assert presentation.channel_name(dm) is None


def test_speaker_labels_keep_same_named_actors_apart() -> None:
    assert presentation.speaker_label(_hit(1, author_name_shared=True)) == "Sam (sam1)"
    assert presentation.speaker_label(_hit(1)) == "Sam"
    agent = _hit(1, author_name="Helper", author_key="helper", author_kind="agent")
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


def test_page_shrinks_as_the_ledger_fills_and_stops_at_the_ceiling() -> None:
    ledger = Ledger(1)
    assert ledger.page_size(20) == 20
    ledger.evidence = set(range(CEILING - 30))
    assert ledger.page_size(20) == 6
    ledger.evidence = set(range(CEILING - 3))
    assert ledger.page_size(20) == 1
    ledger.evidence = set(range(CEILING))
    assert ledger.page_size(20) == 0


def test_fit_never_overruns_the_ceiling_and_drops_farthest_neighbors_first() -> None:
    ledger = Ledger(1, evidence=set(range(1000, 1000 + CEILING - 3)))
    around = Neighbors((_message(1), _message(2)), (_message(4), _message(5)))
    shown = ledger.fit([_hit(3)], [around])
    # Room for three: the hit, then the line just before and the line just after it.
    assert [m.id for m in shown[0].before] == [2]
    assert [m.id for m in shown[0].after] == [4]
    assert ledger.record(shown) == [2, 3, 4]
    assert len(ledger.evidence) == CEILING


def test_cursor_round_trips_exactly_and_is_bound_to_its_search() -> None:
    bound = cursor.binding(7, "acme", "ANYONE", None, None)
    position = cursor.Position(0.1 + 0.2, 42)
    assert cursor.decode_cursor(cursor.encode_cursor(position, bound), bound) == position
    other = cursor.binding(7, "acme", "YOU", None, None)
    with pytest.raises(InvalidCursor):
        cursor.decode_cursor(cursor.encode_cursor(position, bound), other)
    for garbage in ("", "!!!", "e30", "x" * 500):
        with pytest.raises(InvalidCursor):
            cursor.decode_cursor(garbage, bound)
