"""`recall serve` as a real subprocess on a free 127.0.0.1 port, for the tests that need the
command itself (its workers, the example clients), not the app in process."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path

import httpx

RECALL = Path(sys.executable).with_name("recall")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def start_serve(
    dsn: str, log: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[asyncio.subprocess.Process, str]:
    """`recall serve ARGS` over `dsn`, its output in `log`; the process and its base URL."""
    port = free_port()
    with log.open("wb") as out:  # the child keeps its own descriptor
        proc = await asyncio.create_subprocess_exec(
            str(RECALL),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            *args,
            env={**os.environ, "DATABASE_URL": dsn, **(env or {})},
            stdout=out,
            stderr=out,
        )
    return proc, f"http://127.0.0.1:{port}"


async def wait_ready(
    proc: asyncio.subprocess.Process,
    base: str,
    log: Path,
    seconds: float,
    also: Callable[[], bool] = lambda: True,
) -> None:
    """Until /readyz answers 200 (and `also` holds); AssertionError with the log otherwise."""
    async with httpx.AsyncClient(base_url=base) as http:
        for _ in range(int(seconds * 10)):
            assert proc.returncode is None, f"recall serve exited: {log.read_text()}"
            try:
                if (await http.get("/readyz")).status_code == 200 and also():
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError(f"recall serve did not become ready in {seconds:g} s: {log.read_text()}")
