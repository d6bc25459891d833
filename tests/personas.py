"""Named personas for privacy tests, as a fixture in the format of docs/fixtures.md.

Workspace `acme` (namespace slack:acme):
  alice, bob, carol      people; two different people both named "Sam" (sam1, sam2)
  helper                 alice's agent; `scout` is bob's agent
  general                public channel (alice, bob, helper) — carol never joined
  secret                 private channel (alice, helper)
  partners               shared channel (alice, carol, helper)
  dm-alice / dm-bob      DMs of alice / bob with helper
  t-general              a thread under general
Workspace `globex` holds mallory, who must never see anything of acme (and vice versa).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import asyncpg


def acme() -> dict[str, Any]:
    return {
        "workspace": {"key": "acme", "name": "Acme"},
        "namespace": "slack:acme",
        "members": [
            {"key": "alice", "name": "Alice"},
            {"key": "bob", "name": "Bob"},
            {"key": "carol", "name": "Carol"},
            {"key": "sam1", "name": "Sam"},
            {"key": "sam2", "name": "Sam"},
        ],
        "agents": [
            {"key": "helper", "name": "Helper", "owner": "alice"},
            {"key": "scout", "name": "Scout", "owner": "bob"},
        ],
        "scopes": [
            {
                "key": "general",
                "kind": "channel",
                "visibility": "public",
                "name": "general",
                "members": ["alice", "bob", "sam1", "sam2", "helper", "scout"],
            },
            {
                "key": "secret",
                "kind": "channel",
                "visibility": "private",
                "name": "secret",
                "members": ["alice", "helper"],
            },
            {
                "key": "partners",
                "kind": "channel",
                "visibility": "shared",
                "name": "partners",
                "members": ["alice", "carol", "helper"],
            },
            {"key": "dm-alice", "kind": "dm", "members": ["alice", "helper"]},
            {"key": "dm-bob", "kind": "dm", "members": ["bob", "helper", "scout"]},
            {"key": "t-general", "kind": "thread", "parent": "general", "root": "g1"},
        ],
        "memories": [{"key": "mem-alice", "audience": {"kind": "members", "readers": ["alice"]}}],
        "messages": [
            {
                "key": "g1",
                "scope": "general",
                "author": "alice",
                "at": "2026-03-02T10:00:00Z",
                "body": "We decided to move Acme on Friday",
            },
            {
                "key": "g2",
                "scope": "general",
                "author": "bob",
                "at": "2026-03-02T10:01:00Z",
                "body": "Friday works for the Acme migration",
            },
            {
                "key": "t1",
                "scope": "t-general",
                "author": "bob",
                "at": "2026-03-02T10:02:00Z",
                "body": "thread reply about the Acme cutover window",
            },
            {
                "key": "s1",
                "scope": "secret",
                "author": "alice",
                "at": "2026-03-02T11:00:00Z",
                "body": "secret budget for the Acme deal is 40k",
            },
            {
                "key": "p1",
                "scope": "partners",
                "author": "carol",
                "at": "2026-03-02T11:30:00Z",
                "body": "partners see the Acme roadmap draft",
            },
            {
                "key": "da1",
                "scope": "dm-alice",
                "author": "alice",
                "at": "2026-03-02T12:00:00Z",
                "body": "my Acme salary question is private",
            },
            {
                "key": "da2",
                "scope": "dm-alice",
                "author": "helper",
                "at": "2026-03-02T12:01:00Z",
                "body": "Noted your Acme question",
                "sources": ["da1"],
            },
            {
                "key": "db1",
                "scope": "dm-bob",
                "author": "bob",
                "at": "2026-03-02T12:30:00Z",
                "body": "bob private Acme note",
            },
            {
                "key": "g3",
                "scope": "general",
                "author": "helper",
                "at": "2026-03-02T13:00:00Z",
                "body": "Summary: Acme plan looks good",
                "sources": ["da1"],
            },
            {
                "key": "g4",
                "scope": "general",
                "author": "helper",
                "at": "2026-03-02T13:05:00Z",
                "body": "Acme recap from memory",
                "memorySources": ["mem-alice"],
            },
            {
                "key": "g5",
                "scope": "general",
                "author": "bob",
                "at": "2026-03-02T13:10:00Z",
                "body": "legacy Acme row",
                "evidence": False,
            },
            {
                "key": "g6",
                "scope": "general",
                "author": "sam1",
                "at": "2026-03-02T13:20:00Z",
                "body": "Sam one says Acme hello",
            },
            {
                "key": "g7",
                "scope": "general",
                "author": "sam2",
                "at": "2026-03-02T13:21:00Z",
                "body": "Sam two says Acme hello",
            },
            {
                "key": "g8",
                "scope": "general",
                "author": "scout",
                "at": "2026-03-02T13:30:00Z",
                "body": "Scout reporting on Acme",
            },
        ],
    }


def globex() -> dict[str, Any]:
    return {
        "workspace": {"key": "globex", "name": "Globex"},
        "namespace": "slack:globex",
        "members": [{"key": "mallory", "name": "Mallory"}],
        "agents": [{"key": "spy", "name": "Spy", "owner": "mallory"}],
        "scopes": [
            {
                "key": "lobby",
                "kind": "channel",
                "visibility": "public",
                "name": "lobby",
                "members": ["mallory", "spy"],
            },
        ],
        "memories": [],
        "messages": [
            {
                "key": "x1",
                "scope": "lobby",
                "author": "mallory",
                "at": "2026-03-02T09:00:00Z",
                "body": "Globex wants the Acme secret budget",
            },
        ],
    }


def people(*keys: str) -> list[dict[str, Any]]:
    """The named members or agents as the personas declare them, for a fixture of another shape
    with the same people: one cast, whatever the workspace around it."""
    declared = {p["key"]: p for f in (acme(), globex()) for p in f["members"] + f["agents"]}
    return [declared[key] for key in keys]


async def load(conn: asyncpg.Connection, fixture: dict[str, Any]) -> dict[str, Any]:
    """Import a fixture through the same path as `recall import`."""
    from app.workspace_import.importer import import_fixture_file

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fixture.json"
        path.write_text(json.dumps(fixture), encoding="utf-8")
        result: dict[str, Any] = await import_fixture_file(conn, path, progress=sys.stderr)
        return result


async def load_personas(conn: asyncpg.Connection) -> None:
    await load(conn, acme())
    await load(conn, globex())
