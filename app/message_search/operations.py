"""`recall search`: the operator commands that fill a workspace's readiness row step by step
(backfill, finalize, promote; docs/design.md, Readiness, and docs/cli.md).

Each step checks the one before it, so the gate (app.message_search.readiness) opens only on a
workspace whose documents are all written, indexed and kept up to date by the triggers.
"""

from __future__ import annotations

from typing import Any, TextIO

from app.data.executor import Executor
from app.data.readiness import (
    ReadinessRow,
    backfill_batch,
    index_is_valid,
    missing_documents,
    readiness_of,
    set_flags,
    triggers_enabled,
    workspaces_in_order,
)
from app.errors import UsageError

_BACKFILL_BATCH = 5_000
_OPERATIONS = ("status", "backfill", "finalize", "promote", "ensure-ready")


async def run_operation(
    conn: Executor, operation: str, workspace_key: str | None, log: TextIO
) -> dict[str, Any]:
    """Run one `recall search` operation; phase lines go to `log`, the summary is returned.

    Without --workspace, status and ensure-ready cover every workspace; the single-step
    commands (backfill, finalize, promote) require one, as they repair one projection.
    """
    if operation not in _OPERATIONS:
        raise UsageError(f"unknown search operation: {operation}")
    targets = await workspaces_in_order(conn, workspace_key)
    if workspace_key is not None and not targets:
        raise UsageError(f"unknown workspace: {workspace_key}")
    if operation in ("backfill", "finalize", "promote") and workspace_key is None:
        raise UsageError(f"recall search {operation} needs --workspace KEY")

    results: list[dict[str, Any]] = []
    for ws_id, key in targets:
        if operation == "status":
            results.append(_status(key, await readiness_of(conn, ws_id)))
            continue
        if operation == "ensure-ready":
            row = await readiness_of(conn, ws_id)
            if row.ready:
                print(f"[{key}] already ready", file=log, flush=True)
                results.append(_status(key, row))
                continue
            # Fail fast: the first workspace error stops the run (the error propagates).
            await _backfill(conn, ws_id, key, log)
            await _finalize(conn, ws_id, key, log)
            await _promote(conn, ws_id, key, log)
        elif operation == "backfill":
            await _backfill(conn, ws_id, key, log)
        elif operation == "finalize":
            await _finalize(conn, ws_id, key, log)
        else:
            await _promote(conn, ws_id, key, log)
        results.append(_status(key, await readiness_of(conn, ws_id)))
    return {"operation": operation, "workspaces": results}


def _status(key: str, row: ReadinessRow) -> dict[str, Any]:
    return {
        "workspace": key,
        "migrated": row.migrated,
        "backfilled": row.backfilled,
        "finalized": row.finalized,
        "read_ready": row.read_ready,
        "ready": row.ready,
    }


async def _backfill(conn: Executor, ws_id: int, key: str, log: TextIO) -> None:
    print(f"[{key}] backfill: start", file=log, flush=True)
    total = 0
    # Batches keep each transaction short on a large workspace; each batch inserts only
    # missing documents, so a rerun (or a concurrent trigger insert) never duplicates.
    while True:
        inserted = await backfill_batch(conn, ws_id, _BACKFILL_BATCH)
        total += inserted
        if inserted:
            print(f"[{key}] backfill: {total} documents written", file=log, flush=True)
        if inserted < _BACKFILL_BATCH:
            break
    await set_flags(conn, ws_id, migrated=True, backfilled=True)
    print(f"[{key}] backfill: done ({total} documents written)", file=log, flush=True)


async def _finalize(conn: Executor, ws_id: int, key: str, log: TextIO) -> None:
    print(f"[{key}] finalize: verifying index and triggers", file=log, flush=True)
    row = await readiness_of(conn, ws_id)
    if not row.backfilled:
        raise UsageError(f"workspace {key} is not backfilled; run recall search backfill first")
    if not await index_is_valid(conn):
        raise UsageError("the GIN index search_documents_tsv is missing or invalid")
    if not await triggers_enabled(conn):
        raise UsageError(
            "the search triggers (on messages, and the block summaries' on search_documents)"
            " are missing or disabled"
        )
    await set_flags(conn, ws_id, finalized=True)
    print(f"[{key}] finalize: done", file=log, flush=True)


async def _promote(conn: Executor, ws_id: int, key: str, log: TextIO) -> None:
    print(f"[{key}] promote: checking for missing documents", file=log, flush=True)
    row = await readiness_of(conn, ws_id)
    if not row.finalized:
        raise UsageError(f"workspace {key} is not finalized; run recall search finalize first")
    missing = await missing_documents(conn, ws_id)
    if missing:
        raise UsageError(
            f"workspace {key} has {missing} messages without search documents;"
            " run recall search backfill first"
        )
    await set_flags(conn, ws_id, read_ready=True)
    print(f"[{key}] promote: read-ready", file=log, flush=True)
