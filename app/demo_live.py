"""`recall serve --demo --demo-live`: the demo workspace keeps living.

A short scripted conversation is replayed through the connector's applier, one change every
few seconds, so a person trying the Messages tab sees new messages arrive, get edited and
become searchable. Keys carry the start time, so every run posts new messages.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from app.changes.batch import apply_batch
from app.changes.model import parse_change
from app.db import connect
from app.demo import WORKSPACE

# scope | author | body. "EDIT:" rewrites the previous post; "REPLY:" is an agent's reply
# built on the previous post (its provenance).
_SCRIPT = """
incidents|heidi|Paging: checkout latency is up again, p99 over 2 s since 10:40
incidents|bob|Looking. The payments pool is saturated, same ERR_POOL_TIMEOUT as last week
incidents|atlas|REPLY:Summary so far: checkout p99 above 2 s, payments pool saturated (ERR_POOL_TIMEOUT)
engineering|carol|Raising the payments pool to 40 connections as a stopgap
incidents|bob|Pool raised to 40; checkout p99 back under 300 ms
incidents|bob|EDIT:Pool raised to 40 (stopgap); checkout p99 back under 300 ms, watching it
general|alice|Retro for the checkout incident on Thursday at 3pm, everyone welcome
random|erin|Who took the last oat milk? Asking for a friend 🥛
engineering|ivan|Proposal: move the payments pool size into config so we can change it without a deploy
general|grace|Reminder: quarterly planning docs are due Friday
"""


def _script() -> list[tuple[str, str, str]]:
    out = []
    for line in _SCRIPT.strip().splitlines():
        scope, author, body = line.split("|", 2)
        out.append((scope, author, body))
    return out


def demo_changes(run: str) -> Iterator[dict[str, Any]]:
    """The scripted changes, in order, with keys unique to this run."""
    previous: str | None = None
    for n, (scope, author, body) in enumerate(_script()):
        at = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        if body.startswith("EDIT:") and previous is not None:
            yield {"editMessage": {"key": previous, "body": body.removeprefix("EDIT:")}}
            continue
        key = f"live-{run}-{n}"
        payload: dict[str, Any] = {"key": key, "scope": scope, "author": author, "at": at}
        if body.startswith("REPLY:") and previous is not None:
            payload.update(body=body.removeprefix("REPLY:"), sources=[previous])
        else:
            payload["body"] = body
        yield {"postMessage": payload}
        previous = key


async def replay_demo_changes(dsn: str, *, interval: float = 4.0) -> None:
    """Apply the script, one change every `interval` seconds, then stop."""
    run = str(int(time.time()))
    conn = await connect(dsn)
    try:
        workspace_id = await conn.fetchval("select id from workspaces where key = $1", WORKSPACE)
        if workspace_id is None:
            return
        for change in demo_changes(run):
            await asyncio.sleep(interval)
            await apply_batch(conn, workspace_id, [parse_change(0, change)])
            kind = next(iter(change))
            print(f"recall: demo-live applied {kind} {change[kind]['key']}", file=sys.stderr)
    finally:
        await conn.close()
