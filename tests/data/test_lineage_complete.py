"""A request whose workspace has no missing lineage summary leaves the live walk out of its
search statements (Reader.lineage_complete, migrations/020 and 021); a missing summary is then denied,
never shown unchecked, and a workspace with one missing is walked as before."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from app.data.eligibility import eligible
from app.data.readers import reader_for_token
from app.settings import Settings
from tests.history_support import hit_keys, load_history_personas, start_turn
from tests.history_support import search as history_search
from tests.message_search_support import keys
from tests.personas import load_personas
from tests.recording import Recorder, recording_client
from tests.rows import one

# The live walk's recursive CTE (app.data.eligibility.live_lineage_allows).
_WALK = "with recursive walk"


def _searches(recorder: Recorder) -> list[str]:
    """The search statements a request sent (messageSearch's page, historySearch's window)."""
    return [
        sql
        for sql, _ in recorder.take()
        if "probe as materialized" in sql or "examined as materialized" in sql
    ]


async def _forget_summary(db: asyncpg.Connection, key: str) -> None:
    """A summary gone missing outside the app's writes (each of those fills it again in its own
    transaction)."""
    await db.execute(
        "update messages set lineage_audience_ids = null, lineage_denied = null where key = $1",
        key,
    )


async def _alice_finds_g4(
    monkeypatch: pytest.MonkeyPatch,
    dsn: str,
    settings: Settings,
    db: asyncpg.Connection,
    issue_token: Any,
) -> list[str]:
    """alice finds g4 by messageSearch and by historySearch (her helper's turn in her DM);
    the search statements those sent."""
    alice = await issue_token("member", "acme", "alice")
    async with recording_client(monkeypatch, settings, dsn) as (client, recorder):
        assert "g4" in await keys(client, alice, "recap")
        turn = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
        assert "g4" in hit_keys(await history_search(client, turn, "recap"))
        return _searches(recorder)


async def test_searches_leave_the_walk_out_when_no_summary_is_missing(
    monkeypatch: pytest.MonkeyPatch,
    dsn: str,
    settings: Settings,
    db: asyncpg.Connection,
    issue_token: Any,
) -> None:
    await load_history_personas(db)
    # g4 is built from alice's private memory: its cached summary admits her.
    statements = await _alice_finds_g4(monkeypatch, dsn, settings, db, issue_token)
    assert statements, "no search statement was recorded"
    assert not [sql for sql in statements if _WALK in sql]


async def test_a_missing_summary_is_walked(
    monkeypatch: pytest.MonkeyPatch,
    dsn: str,
    settings: Settings,
    db: asyncpg.Connection,
    issue_token: Any,
) -> None:
    await load_history_personas(db)
    await _forget_summary(db, "g4")
    # The walk decides: alice may read g4's lineage, bob may not.
    statements = await _alice_finds_g4(monkeypatch, dsn, settings, db, issue_token)
    assert statements and all(_WALK in sql for sql in statements)
    async with recording_client(monkeypatch, settings, dsn) as (client, _):
        bob = await issue_token("member", "acme", "bob")
        assert "g4" not in await keys(client, bob, "recap")


async def test_the_token_reports_whether_a_summary_is_missing(
    db: asyncpg.Connection, issue_token: Any
) -> None:
    await load_personas(db)
    token = await issue_token("member", "acme", "alice")
    reader = await reader_for_token(db, token)
    assert reader is not None and reader.lineage_complete
    await _forget_summary(db, "g3")
    reader = await reader_for_token(db, token)
    assert reader is not None and not reader.lineage_complete


async def test_a_summary_missing_after_the_token_was_read_is_denied(
    db: asyncpg.Connection,
) -> None:
    """The statements of a request that found every summary cached deny one that went missing
    since (fail closed): never shown unchecked, whoever reads."""
    await load_personas(db)
    await _forget_summary(db, "g4")
    await _forget_summary(db, "g3")
    ws, ns = one(
        await db.fetchrow("select id, default_namespace_id from workspaces where key = 'acme'")
    )
    for person in ("alice", "bob"):
        actor = await db.fetchval("select id from actors where key = $1", person)
        shown = await db.fetch(
            f"select m.key from messages m where m.workspace_id = $1"
            f" and m.key = any($5::text[]) and {eligible('m', complete=True)}",
            ws,
            "members",
            ns,
            [actor],
            ["g3", "g4", "g1"],
        )
        # g1 has no provenance: a summary is not needed to read it.
        assert [r["key"] for r in shown] == ["g1"], person
