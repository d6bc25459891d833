"""`recall serve --workers N`: several processes accept on one port, each with its own pool."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from tests.personas import load_personas
from tests.servers import start_serve, wait_ready

SEARCH = '{ messageSearch(query: "Acme", first: 5) { edges { node { key } } } }'


def _workers(pid: int) -> list[int]:
    """The supervisor's worker processes (not multiprocessing's resource tracker)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(c) for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]


async def test_two_workers_serve_one_port_each_with_its_own_pool(
    dsn: str, db: asyncpg.Connection, issue_token: Any, tmp_path: Path
) -> None:
    await load_personas(db)
    token = await issue_token("member", "acme", "alice")
    log = tmp_path / "server.log"
    proc, base = await start_serve(dsn, log, "--workers", "2", env={"RECALL_POOL_MIN": "1"})
    try:
        await wait_ready(proc, base, log, 60, also=lambda: len(_workers(proc.pid)) == 2)
        workers = _workers(proc.pid)
        assert len(workers) == 2

        # Concurrent requests on separate connections: every one answered, by either.
        async def one() -> list[str]:
            async with httpx.AsyncClient(base_url=base) as own:
                response = await own.post(
                    "/graphql",
                    json={"query": SEARCH},
                    headers={"authorization": f"Bearer {token}"},
                )
            body = response.json()
            assert response.status_code == 200 and "errors" not in body, body
            return [e["node"]["key"] for e in body["data"]["messageSearch"]["edges"]]

        results = await asyncio.gather(*(one() for _ in range(16)))
        assert all(r == results[0] and r for r in results)
        # The workers opened their pools (at least one connection each, RECALL_POOL_MIN).
        clients = await db.fetchval(
            "select count(*) from pg_stat_activity where datname = current_database()"
            " and pid <> pg_backend_pid()"
        )
        assert clients >= 2
    finally:
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 30)
    assert code == 0, log.read_text()
    # The supervisor stopped its workers before it exited.
    assert all(not Path(f"/proc/{w}").exists() for w in workers)
