"""The MCP tests' raw wire: JSON-RPC as bytes over HTTP to the in-process app, and as lines over
`recall mcp`'s stdin/stdout, for what no SDK client sends (batches, garbage) and to see exactly
what a client receives."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from tests.mcp_support import RECALL

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def initialize(id: int = 0, version: str = "2025-03-26") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


def request(id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params or {}}


class StdioWire:
    """`recall mcp` spoken to line by line."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def send_line(self, line: str | bytes) -> None:
        assert self.proc.stdin is not None
        data = line.encode() if isinstance(line, str) else line
        self.proc.stdin.write(data + b"\n")
        await self.proc.stdin.drain()

    async def send(self, message: Any) -> None:
        await self.send_line(json.dumps(message))

    async def receive(self) -> Any:
        """The next line `recall mcp` writes (within 20 s), decoded."""
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 20)
        assert line, "recall mcp closed its stdout"
        return json.loads(line)

    async def handshake(self, version: str = "2025-03-26") -> dict[str, Any]:
        await self.send(initialize(0, version))
        answer = await self.receive()
        await self.send(INITIALIZED)
        return dict(answer)


@asynccontextmanager
async def stdio_wire(dsn: str, token: str) -> AsyncIterator[StdioWire]:
    env = {**os.environ, "DATABASE_URL": dsn, "RECALL_TOKEN": token, "RECALL_LOG_LEVEL": "info"}
    proc = await asyncio.create_subprocess_exec(
        str(RECALL),
        "mcp",
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    wire = StdioWire(proc)
    try:
        yield wire
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 20)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise AssertionError("recall mcp did not exit when its stdin closed") from None


async def stderr_of(wire: StdioWire) -> str:
    """What `recall mcp` logged, once it has exited (after the stdio_wire block)."""
    assert wire.proc.stderr is not None
    return (await wire.proc.stderr.read()).decode()
