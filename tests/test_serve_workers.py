"""`recall serve --workers N`: several processes accept on one port, each with its own pool."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from tests.personas import load_personas

RECALL = Path(sys.executable).with_name("recall")
SEARCH = '{ messageSearch(query: "Acme", first: 5) { edges { node { key } } } }'


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _workers(pid: int) -> list[int]:
    """The supervisor's worker processes (not multiprocessing's resource tracker)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(c) for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]


async def test_two_workers_serve_one_port_each_with_its_own_pool(
    dsn: str, db: asyncpg.Connection, issue_token: Any, tmp_path: Path
) -> None:
    await load_personas(db)
    token = await issue_token("member", "acme", "alice")
    port = _free_port()
    log = (tmp_path / "server.log").open("wb")
    proc = await asyncio.create_subprocess_exec(
        str(RECALL),
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "2",
        env={**os.environ, "DATABASE_URL": dsn, "RECALL_POOL_MIN": "1"},
        stdout=log,
        stderr=log,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=base) as http:
            for _ in range(600):
                assert proc.returncode is None, (tmp_path / "server.log").read_text()
                try:
                    if (await http.get("/readyz")).status_code == 200 and len(
                        _workers(proc.pid)
                    ) == 2:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("recall serve --workers 2 did not become ready in 60 s")
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
        log.close()
    assert code == 0, (tmp_path / "server.log").read_text()
    # The supervisor stopped its workers before it exited.
    assert all(not Path(f"/proc/{w}").exists() for w in workers)
