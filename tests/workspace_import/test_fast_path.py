"""The fixture's fast path (app/workspace_import/model.py): the messages of a fixture are checked
by plain Python instead of a pydantic model each. What it accepts, pydantic accepts with the
same values; anything else goes through pydantic, so errors are worded as before
(test_import.py's BAD list runs every bad fixture through both)."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from pydantic import ValidationError

from app.workspace_import import model
from app.workspace_import.importer import import_fixture_file
from tests.workspace_import.test_import import valid


def _slow(data: dict[str, Any]) -> model.CheckedFixture:
    return model.checked_fixture(model.Fixture.model_validate_json(json.dumps(data)))


def _same(fast: model.CheckedFixture, slow: model.CheckedFixture) -> None:
    assert fast.fixture.model_dump(exclude={"messages"}) == slow.fixture.model_dump(
        exclude={"messages"}
    )
    assert fast.message_index == slow.message_index
    assert len(fast.messages) == len(slow.messages)
    for a, b in zip(fast.messages, slow.messages, strict=True):
        assert a == b
        # The same instant is not enough: the same offset too (created_at is stored in UTC,
        # but an equal pair of tuples would hide a parse that dropped it and added it back).
        assert a[3].utcoffset() == b[3].utcoffset()
        assert [type(x) for x in a] == [type(x) for x in b]


def _with_message(**fields: Any) -> dict[str, Any]:
    data = copy.deepcopy(valid())
    data["messages"][0] = {**data["messages"][0], **fields}
    return data


ACCEPTED: list[dict[str, Any]] = [
    {},
    {"at": "2026-03-02T10:00:00.5Z"},
    {"at": "2026-03-02T10:00:00.123456+05:30"},
    {"at": "2026-03-02T10:00:00.1234-08:00"},
    {"at": "2026-03-02T23:59:59-00:00"},
    {"at": "1900-01-01T00:30:00+00:00"},
    {"at": "9999-12-29T23:59:59Z"},
    {"evidence": False},
    {"evidence": True, "sources": [], "memorySources": []},
    {"body": ""},
    {"body": "caf\u00e9 \u6771\u4eac \U0001f600 a\nb\tc"},
    {"key": "k" * model.MAX_KEY},
    {"body": "b" * model.MAX_BODY},
]


@pytest.mark.parametrize("fields", ACCEPTED, ids=[str(i) for i in range(len(ACCEPTED))])
def test_the_fast_path_takes_plain_messages_as_pydantic_would(fields: dict[str, Any]) -> None:
    data = _with_message(**fields)
    fast = model._checked_fast(model._decoded(json.dumps(data).encode()))
    assert fast is not None, "the fast path gave up on a plain fixture"
    _same(fast, _slow(data))


# Valid for pydantic, but not in the fast path's one plain form: it gives up, and the
# fixture is read as before.
HANDED_ON: list[dict[str, Any]] = [
    {"at": "2026-03-02 10:00:00Z"},
    {"at": "2026-03-02T10:00:00+0000"},
    {"at": "2026-03-02T10:00Z"},
    {"at": "2026-03-02T10:00:00.1234567Z"},
    {"at": "2026-03-02t10:00:00z"},
    {"at": "\u0662\u0660\u0662\u0666-03-02T10:00:00Z"},  # Arabic-Indic digits
    {"at": "2026-02-30T10:00:00Z"},
    {"at": "1900-01-01T00:30:00+01:00"},
    {"at": "9999-12-30T00:00:00Z"},
    {"evidence": 1},
    {"sources": "d1"},
    {"sources": [""]},
    {"memorySources": ["a\x00"]},
    {"memory_sources": []},
    {"key": "k" * (model.MAX_KEY + 1)},
    {"body": "b" * (model.MAX_BODY + 1)},
    {"body": "a\x00b"},
    {"scope": 7},
]


@pytest.mark.parametrize("fields", HANDED_ON, ids=[str(i) for i in range(len(HANDED_ON))])
def test_the_fast_path_hands_on_what_it_is_not_sure_of(fields: dict[str, Any]) -> None:
    data = _with_message(**fields)
    assert model._checked_fast(model._decoded(json.dumps(data).encode())) is None
    try:
        slow = _slow(data)
    except (model.FixtureError, ValidationError):
        return
    # Valid after all: the file reads as it did before.
    assert model.check_fixture(data).messages == slow.messages


def test_a_fixture_that_is_not_json_or_not_an_object_is_handed_on() -> None:
    assert model._decoded(b'{"messages": [NaN]}') is None
    assert model._decoded(b"{") is None
    assert model._checked_fast([1, 2]) is None
    assert model._checked_fast({**valid(), "messages": {}}) is None
    assert model._checked_fast({**valid(), "extra": 1}) is None


async def test_a_fast_path_import_matches_a_pydantic_one(
    db: asyncpg.Connection, tmp_path: Path
) -> None:
    """Rows written from the fast path's messages, compared with the same fixture made to
    take pydantic's path (one message's time written with a space)."""
    data = valid()
    fast, slow = tmp_path / "fast.json", tmp_path / "slow.json"
    fast.write_text(json.dumps(data), encoding="utf-8")
    assert model._checked_fast(model._decoded(fast.read_bytes())) is not None
    other = copy.deepcopy(data)
    other["workspace"]["key"] = "acme2"
    first = other["messages"][0]
    first["at"] = first["at"].replace("T", " ")
    slow.write_text(json.dumps(other), encoding="utf-8")
    assert model._checked_fast(model._decoded(slow.read_bytes())) is None

    for path in (fast, slow):
        await import_fixture_file(db, path, progress=io.StringIO())
    rows = {
        key: [
            tuple(r)
            for r in await db.fetch(
                """
                select m.key, s.key as scope, a.key as author, m.seq, m.global_seq, m.body,
                       m.created_at, m.evidence, m.has_provenance,
                       array(select x.key from message_sources ms
                             join messages x on x.workspace_id = ms.workspace_id
                                            and x.id = ms.source_message_id
                             where ms.workspace_id = m.workspace_id and ms.message_id = m.id
                             order by 1) as sources
                from messages m
                join workspaces w on w.id = m.workspace_id
                join scopes s on s.workspace_id = m.workspace_id and s.id = m.scope_id
                join actors a on a.workspace_id = m.workspace_id and a.id = m.author_id
                where w.key = $1
                order by m.global_seq
                """,
                key,
            )
        ]
        for key in ("acme", "acme2")
    }
    assert rows["acme"] and rows["acme"] == rows["acme2"]
