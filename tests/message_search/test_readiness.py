"""The search readiness gate and the `recall search` operator commands."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from app.errors import UsageError
from app.message_search.operations import run_operation
from tests.message_search_support import SEARCH, keys, workspace
from tests.personas import load, load_personas

RECALL = Path(sys.executable).parent / "recall"
STATUS = "{ searchStatus { ready migrated backfilled finalized } }"


@pytest.fixture
async def alice(db: asyncpg.Connection, issue_token: Any) -> str:
    await load_personas(db)
    token: str = await issue_token("member", "acme", "alice")
    return token


async def _reset(db: asyncpg.Connection, key: str, **flags: bool) -> None:
    """Put a workspace back to a pre-sidecar state (as migration 003 leaves old workspaces)."""
    await db.execute(
        "update search_readiness r set migrated = $2, backfilled = $3, finalized = $4,"
        " read_ready = $5 from workspaces w where w.id = r.workspace_id and w.key = $1",
        key,
        flags.get("migrated", True),
        flags.get("backfilled", False),
        flags.get("finalized", False),
        flags.get("read_ready", False),
    )


async def _run(db: asyncpg.Connection, operation: str, key: str | None = "acme") -> Any:
    log = io.StringIO()
    summary = await run_operation(db, operation, key, log)
    return summary, log.getvalue()


async def test_a_new_workspace_is_ready_from_birth(client: Any, alice: str) -> None:
    data = await client.gql(STATUS, token=alice)
    assert data["searchStatus"] == {
        "ready": True,
        "migrated": True,
        "backfilled": True,
        "finalized": True,
    }


async def test_search_is_unavailable_until_read_ready(
    client: Any, db: asyncpg.Connection, alice: str
) -> None:
    await _reset(db, "acme", backfilled=True, finalized=True, read_ready=False)
    result = await client.post(SEARCH, {"q": "acme"}, token=alice)
    assert result.codes == ["SEARCH_UNAVAILABLE"]
    assert (await client.gql(STATUS, token=alice))["searchStatus"]["ready"] is False
    # Nothing was read, so nothing was audited.
    assert await db.fetchval("select count(*) from search_audit") == 0
    await db.execute("delete from search_readiness")
    result = await client.post(SEARCH, {"q": "acme"}, token=alice)
    assert result.codes == ["SEARCH_UNAVAILABLE"]


async def test_backfill_finalize_promote_make_a_workspace_ready(
    client: Any, db: asyncpg.Connection, alice: str
) -> None:
    await _reset(db, "acme", backfilled=True, finalized=True)
    await db.execute(
        "delete from search_documents d using messages m"
        " where m.workspace_id = d.workspace_id and m.id = d.message_id"
        " and m.key in ('g1', 'g2')"
    )
    with pytest.raises(UsageError, match="2 messages without search documents"):
        await _run(db, "promote")
    summary, log = await _run(db, "backfill")
    assert "[acme] backfill: done (2 documents written)" in log
    assert summary["workspaces"][0]["backfilled"] is True
    await _run(db, "finalize")
    summary, log = await _run(db, "promote")
    assert "[acme] promote: read-ready" in log
    assert summary == {
        "operation": "promote",
        "workspaces": [
            {
                "workspace": "acme",
                "migrated": True,
                "backfilled": True,
                "finalized": True,
                "read_ready": True,
                "ready": True,
            }
        ],
    }
    assert await keys(client, alice, "friday") == ["g2", "g1"]


async def test_steps_refuse_to_run_out_of_order(db: asyncpg.Connection, alice: str) -> None:
    await _reset(db, "acme")
    with pytest.raises(UsageError, match="not backfilled"):
        await _run(db, "finalize")
    with pytest.raises(UsageError, match="not finalized"):
        await _run(db, "promote")


async def test_finalize_verifies_the_index_and_triggers(db: asyncpg.Connection, alice: str) -> None:
    await _reset(db, "acme", backfilled=True)
    await db.execute("alter table messages disable trigger messages_index_insert")
    with pytest.raises(UsageError, match="triggers"):
        await _run(db, "finalize")
    await db.execute("alter table messages enable trigger messages_index_insert")
    # The block summaries' too: without them several words miss what is written after.
    await db.execute("alter table search_documents disable trigger search_documents_block_insert")
    with pytest.raises(UsageError, match="triggers"):
        await _run(db, "finalize")
    await db.execute("alter table search_documents enable trigger search_documents_block_insert")
    await db.execute("drop index search_documents_tsv")
    with pytest.raises(UsageError, match="search_documents_tsv"):
        await _run(db, "finalize")
    # As the migrations made it, its storage setting included (the next test may reuse it).
    await db.execute(
        "create index search_documents_tsv on search_documents using gin (tsv)"
        " with (gin_pending_list_limit = 256)"
    )
    await _run(db, "finalize")


async def test_commands_are_idempotent_and_never_downgrade(
    client: Any, db: asyncpg.Connection, alice: str
) -> None:
    for operation in ("backfill", "finalize", "promote", "backfill", "ensure-ready", "status"):
        summary, _ = await _run(db, operation)
        assert summary["workspaces"][0]["ready"] is True, operation
    assert await keys(client, alice, "friday") == ["g2", "g1"]


async def test_ensure_ready_walks_every_workspace_in_creation_order(
    db: asyncpg.Connection, alice: str
) -> None:
    await load(db, workspace([("m1", "room", "ann", "hello")], key="lab"))
    await _reset(db, "lab")
    summary, log = await _run(db, "ensure-ready", None)
    assert [w["workspace"] for w in summary["workspaces"]] == ["acme", "globex", "lab"]
    assert all(w["ready"] for w in summary["workspaces"])
    assert "[acme] already ready" in log
    assert "[lab] backfill: start" in log and "[lab] promote: read-ready" in log


async def test_an_unknown_workspace_is_a_usage_error(db: asyncpg.Connection, alice: str) -> None:
    with pytest.raises(UsageError, match="unknown workspace: nope"):
        await _run(db, "status", "nope")
    with pytest.raises(UsageError, match="--workspace"):
        await _run(db, "backfill", None)


def _recall(dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATABASE_URL": dsn}
    env.pop("RECALL_MASTER_KEY", None)
    return subprocess.run(
        [str(RECALL), *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


async def test_the_cli_prints_phases_on_stderr_and_json_on_stdout(
    dsn: str, db: asyncpg.Connection, alice: str
) -> None:
    await _reset(db, "globex")
    done = _recall(dsn, "search", "ensure-ready")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["operation"] == "ensure-ready"
    assert [w["ready"] for w in summary["workspaces"]] == [True, True]
    assert "[acme] already ready" in done.stderr
    assert "[globex] finalize: done" in done.stderr

    status = _recall(dsn, "search", "status", "--workspace", "globex")
    assert json.loads(status.stdout)["workspaces"][0]["ready"] is True

    bad = _recall(dsn, "search", "promote", "--workspace", "nope")
    assert bad.returncode == 1
    assert bad.stdout == ""
    assert bad.stderr.strip().splitlines() == ["recall: unknown workspace: nope"]
