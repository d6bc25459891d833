"""The demo workspace: imported once, deterministic, and showing off what search must handle."""

from __future__ import annotations

import io
import re

import asyncpg

from app.demo import build_demo_fixture, ensure_demo
from app.workspace_import.model import parse_fixture
from tests.rows import one

HAN = re.compile(r"[\u4e00-\u9fff]")
KANA = re.compile(r"[\u3040-\u30ff]")
HANGUL = re.compile(r"[\uac00-\ud7af]")


def test_builder_is_deterministic_and_valid() -> None:
    first = build_demo_fixture()
    assert first == build_demo_fixture()
    assert len(first["messages"]) == 3000
    parse_fixture(first)
    bigger = build_demo_fixture(messages=5000)
    assert len(bigger["messages"]) == 5000
    parse_fixture(bigger)


async def test_ensure_demo_imports_once(db: asyncpg.Connection) -> None:
    first = await ensure_demo(db, progress=io.StringIO())
    assert first.imported
    counts = one(
        await db.fetchrow(
            "select (select count(*) from workspaces) as w, (select count(*) from messages) as m"
        )
    )
    second = await ensure_demo(db, progress=io.StringIO())
    assert not second.imported
    assert (
        await db.fetchrow(
            "select (select count(*) from workspaces) as w, (select count(*) from messages) as m"
        )
        == counts
    )
    assert counts["w"] == 1 and counts["m"] == 3000

    # The keys serve prints tokens for resolve to the right kinds of actor.
    kinds = await db.fetch(
        "select a.key, a.kind, o.key as owner from actors a"
        " left join actors o on o.workspace_id = a.workspace_id and o.id = a.owner_id"
        " where a.key = any($1::text[])",
        [first.member_key, first.agent_key],
    )
    by_key = {r["key"]: (r["kind"], r["owner"]) for r in kinds}
    assert by_key[first.member_key] == ("member", None)
    assert by_key[first.agent_key] == ("agent", first.member_key)
    dm = await db.fetch(
        "select a.key from scopes s join scope_members sm"
        " on sm.workspace_id = s.workspace_id and sm.scope_id = s.id"
        " join actors a on a.workspace_id = sm.workspace_id and a.id = sm.actor_id"
        " where s.key = $1 and s.kind = 'dm'",
        first.agent_dm_key,
    )
    assert {r["key"] for r in dm} == {first.member_key, first.agent_key}


async def test_demo_has_the_advertised_features(db: asyncpg.Connection) -> None:
    await ensure_demo(db, progress=io.StringIO())
    bodies = [r["body"] for r in await db.fetch("select body from messages")]
    assert sum(bool(HAN.search(b)) and not KANA.search(b) for b in bodies) >= 3, "Chinese"
    assert sum(bool(KANA.search(b)) for b in bodies) >= 3, "Japanese"
    assert sum(bool(HANGUL.search(b)) for b in bodies) == 1, "exactly one Korean line"
    assert any("ERR_CONN_RESET" in b for b in bodies)
    assert any("https://status.example.com/" in b for b in bodies)
    assert any("Postgres" in b for b in bodies) and any("v2.4.0" in b for b in bodies)

    assert await db.fetchval("select count(*) from messages where not evidence") == 1
    sams = await db.fetch("select key from actors where name = 'Sam' and kind = 'member'")
    assert len(sams) == 2

    kinds = {
        (r["kind"], r["visibility"])
        for r in await db.fetch("select distinct kind, visibility from scopes")
    }
    assert kinds == {
        ("channel", "public"), ("channel", "private"), ("channel", "shared"),
        ("channel", "open"), ("dm", None), ("thread", None),
    }  # fmt: skip
    agent_dms = await db.fetchval(
        """
        select count(*) from scopes s where s.kind = 'dm'
          and exists (select 1 from scope_members sm join actors a
                      on a.workspace_id = sm.workspace_id and a.id = sm.actor_id
                      where sm.workspace_id = s.workspace_id and sm.scope_id = s.id
                        and a.kind = 'agent')
          and exists (select 1 from scope_members sm join actors a
                      on a.workspace_id = sm.workspace_id and a.id = sm.actor_id
                      where sm.workspace_id = s.workspace_id and sm.scope_id = s.id
                        and a.kind = 'member')
        """
    )
    assert agent_dms >= 2

    # Agent replies built from a DM, a private channel and a private memory.
    source_scopes = {
        (r["kind"], r["visibility"])
        for r in await db.fetch(
            """
            select distinct s.kind, s.visibility from message_sources ms
            join messages m on m.workspace_id = ms.workspace_id and m.id = ms.source_message_id
            join scopes s on s.workspace_id = m.workspace_id and s.id = m.scope_id
            """
        )
    }
    assert {("dm", None), ("channel", "private")} <= source_scopes
    private_memory_replies = await db.fetchval(
        """
        select count(*) from message_memory_sources ms
        join memories mem on mem.workspace_id = ms.workspace_id and mem.id = ms.memory_id
        join audiences a on a.workspace_id = mem.workspace_id and a.id = mem.audience_id
        join messages m on m.workspace_id = ms.workspace_id and m.id = ms.message_id
        join actors author on author.workspace_id = m.workspace_id and author.id = m.author_id
        where a.kind = 'members' and cardinality(a.readers) = 1 and author.kind = 'agent'
        """
    )
    assert private_memory_replies >= 1
    assert await db.fetchval("select count(*) from memories") >= 3
    span = await db.fetchval("select max(created_at) - min(created_at) from messages")
    assert span.days >= 90, "several months of history"
