"""Live push across server processes: a write through one `recall serve` reaches a subscriber
of another (PostgreSQL NOTIFY carries ids only; each process decides in SQL)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from pathlib import Path
from typing import Any

import asyncpg

from app.data.tokens import issue_connector_token
from tests.changes_support import post
from tests.live_support import SEARCH_UPDATES, connector, live_connection, open_subscriptions
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


async def test_a_server_with_open_subscriptions_stops_promptly_on_sigterm(
    dsn: str, db: asyncpg.Connection, issue_token: Any, tmp_path: Path
) -> None:
    """An orchestrator's SIGTERM must not wait on subscribers: uvicorn waits for every open
    connection's task, so a subscription that never ends would keep the process alive until it
    is killed. The sockets are closed for the clients (they reconnect elsewhere, with `after`)."""
    await load_personas(db)
    tokens = [await issue_token("member", "acme", who) for who in ("alice", "bob", "carol")]
    log = tmp_path / "server.log"
    proc, base = await start_serve(dsn, log, env={"RECALL_POOL_MIN": "1"})
    try:
        await wait_ready(proc, base, log, 60)
        async with contextlib.AsyncExitStack() as stack:
            lives = [
                await stack.enter_async_context(live_connection(base, t))
                for t in tokens
                for _ in range(4)
            ]
            for live in lives:
                await live.subscribe(SEARCH_UPDATES, {"query": "zebra"}, listening=False)
                await live.subscribe(SEARCH_UPDATES, {"query": "roadmap"}, listening=False)
            for _ in range(200):
                if await open_subscriptions(base) >= 2 * len(lives):
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError("the subscriptions did not start listening")
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(proc.wait(), 10)
            assert code == 0, log.read_text()
            # Every client was told: its socket is closed, not left hanging.
            for live in lives:
                await asyncio.wait_for(live.ws.wait_closed(), 5)
                assert live.close_code is not None
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_a_stop_waits_for_a_stuck_request_no_longer_than_the_grace(
    dsn: str, db: asyncpg.Connection, tmp_path: Path
) -> None:
    """SIGTERM waits RECALL_SHUTDOWN_GRACE seconds for open requests, then cancels them: a
    request stuck behind another writer's lock (budgets far longer than the grace) must not
    keep the process alive."""
    from tests.changes_support import APPLY

    await load_personas(db)
    token = await issue_connector_token(db, "acme")
    log = tmp_path / "server.log"
    env = {
        "RECALL_SHUTDOWN_GRACE": "1",
        "RECALL_REQUEST_TIMEOUT": "60",
        "RECALL_STATEMENT_TIMEOUT_MS": "60000",
    }
    proc, base = await start_serve(dsn, log, env=env)
    holder = await asyncpg.connect(dsn)
    try:
        await wait_ready(proc, base, log, 60)
        tx = holder.transaction()
        await tx.start()
        acme = await holder.fetchval("select workspace_id from workspace_keys where key = 'acme'")
        await holder.execute("select 1 from workspaces where id = $1 for update", acme)
        async with connector(base, token) as c:
            stuck = asyncio.ensure_future(
                c.client.post(
                    APPLY, {"changes": [post("stuck-1", "general", "bob", "x")]}, token=token
                )
            )
            await asyncio.sleep(1)  # the request is waiting on the lock
            assert not stuck.done()
            began = time.perf_counter()
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 15)
            assert time.perf_counter() - began < 6, log.read_text()
            with contextlib.suppress(Exception):
                await stuck
        await tx.rollback()
        # Cancelled, it wrote nothing.
        assert await db.fetchval("select count(*) from messages where key = 'stuck-1'") == 0, (
            log.read_text()[-3000:]
        )
    finally:
        await holder.close()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
