"""Live push across server processes: a write through one `recall serve` reaches a subscriber
of another (PostgreSQL NOTIFY carries ids only; each process decides in SQL)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import asyncpg

from app.data.tokens import issue_connector_token
from tests.changes_support import post
from tests.live_support import SEARCH_UPDATES, connector, live_connection
from tests.personas import load_personas
from tests.servers import start_serve, wait_ready


async def test_a_write_through_one_process_reaches_a_subscriber_of_another(
    dsn: str, db: asyncpg.Connection, issue_token: Any, tmp_path: Path
) -> None:
    await load_personas(db)
    alice = await issue_token("member", "acme", "alice")
    carol = await issue_token("member", "acme", "carol")
    token = await issue_connector_token(db, "acme")
    env = {"RECALL_POOL_MIN": "1", "RECALL_TEXT_REMOVAL_INTERVAL": "0"}
    servers = [await start_serve(dsn, tmp_path / f"server{i}.log", env=env) for i in (1, 2)]
    try:
        for i, (proc, base) in enumerate(servers, 1):
            await wait_ready(proc, base, tmp_path / f"server{i}.log", 60)
        (_, one), (_, two) = servers
        async with (
            live_connection(one, alice) as as_alice,
            live_connection(one, carol) as as_carol,
        ):
            alice_sub = await as_alice.subscribe(SEARCH_UPDATES, {"query": "zebra"})
            carol_sub = await as_carol.subscribe(SEARCH_UPDATES, {"query": "zebra"})
            async with connector(two, token) as c:
                await c.apply(
                    post("z-secret", "secret", "alice", "a zebra in secret"),
                    post("z-general", "general", "bob", "a zebra in general"),
                )
            got = {(await alice_sub.next())["edge"]["node"]["key"] for _ in range(2)}
            assert got == {"z-secret", "z-general"}
            # carol reads general, never the private channel she is not in.
            assert (await carol_sub.next())["edge"]["node"]["key"] == "z-general"
            assert await carol_sub.quiet() == []
    finally:
        for proc, _ in servers:
            proc.send_signal(signal.SIGTERM)
        for i, (proc, _) in enumerate(servers, 1):
            code = await asyncio.wait_for(proc.wait(), 30)
            assert code == 0, (tmp_path / f"server{i}.log").read_text()
