"""`recall mcp`: the MCP server over stdio, for one token (RECALL_TOKEN).

The same server and tools as /mcp (app.mcp.server), on pools of its own opened like
`recall serve`'s (the statement timeout on every connection, the request budget around every
call). The token is checked before the server starts (UsageError: `recall mcp` exits 2) and
read again on every call, so revoking it takes effect at once. Nothing but the protocol is
written to stdout; logs go to stderr.

Between the process's stdin/stdout and the SDK's stdio transport sits Framing: the JSON-RPC
framing the transport leaves out (app.mcp.jsonrpc), as /mcp does it. A line that is not JSON
answers -32700, one that is not a message -32600; a batch is answered as one line at the
protocol version the initialize handshake negotiated when it has batches (2025-03-26), refused
otherwise. While serving, fd 0 reads the null device and fd 1 writes to stderr (as the SDK's
own stdio transport arranges), so stray output never reaches the wire.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from io import TextIOWrapper
from typing import Any

import anyio
from mcp.server.stdio import stdio_server
from mcp_types import DEFAULT_NEGOTIATED_VERSION

from app.data.readers import reader_for_token
from app.db import open_pools
from app.errors import RecallError, UsageError
from app.mcp import jsonrpc
from app.mcp.auth import Runtime
from app.mcp.server import RecallMCP, build_server
from app.message_search.keys import KeyRing
from app.request.scope import open_session
from app.settings import Settings


class Framing:
    """Between the wire and the SDK's stdio transport: the SDK iterates over this object for
    its input lines (the wire's, framed) and writes its output lines to it (`write`)."""

    def __init__(
        self, wire_in: anyio.AsyncFile[str], wire_out: anyio.AsyncFile[str], linger: float
    ) -> None:
        self.wire_in, self.wire_out = wire_in, wire_out
        self.linger = linger  # the longest wait for answers once the input has ended
        self.to_sdk, self.from_wire = anyio.create_memory_object_stream[str](16)
        self.writing = anyio.Lock()
        self.version = DEFAULT_NEGOTIATED_VERSION
        self.initialize_ids: set[Any] = set()
        # Requests of a batch in flight: their answers are collected, not written.
        self.pending: dict[Any, anyio.Event] = {}
        self.answers: dict[Any, jsonrpc.Message] = {}
        # Requests handed to the SDK and not answered yet: when the wire's input ends they
        # are still answered (`… | recall mcp` gets every answer) before the server stops.
        self.unanswered: set[Any] = set()
        self.all_answered = anyio.Event()
        self.all_answered.set()

    # The SDK's side: an async iterable of lines, and a file it writes lines to.

    def __aiter__(self) -> AsyncIterator[str]:
        return self.from_wire.__aiter__()

    async def write(self, line: str) -> None:
        message = json.loads(line)
        answered = message.get("id") if "method" not in message else None
        if answered in self.initialize_ids:
            self.initialize_ids.discard(answered)
            result = message.get("result") or {}
            self.version = str(result.get("protocolVersion", self.version))
        if answered in self.pending:  # a batch's: collected, sent with the batch
            self.answers[answered] = message
            self.pending.pop(answered).set()
        else:
            await self._send_line(line.rstrip("\n"))
        if answered is not None:
            # Only once it is on the wire: the input may end, and the server stop, then.
            self._answered(answered)

    def _answered(self, request_id: Any) -> None:
        self.unanswered.discard(request_id)
        if not self.unanswered:
            self.all_answered.set()

    async def flush(self) -> None:
        pass

    # The wire's side.

    async def _send_line(self, line: str) -> None:
        async with self.writing:
            await self.wire_out.write(line + "\n")
            await self.wire_out.flush()

    async def _send(self, answer: jsonrpc.Message | list[jsonrpc.Message]) -> None:
        await self._send_line(json.dumps(answer))

    async def pump(self) -> None:
        """Read the wire until it ends; then, once the batches in flight and the requests still
        unanswered are answered (within `linger`), end the SDK's input, and so the server."""
        async with self.to_sdk:
            async with anyio.create_task_group() as batches:
                async for line in self.wire_in:
                    if not line.strip():
                        continue
                    inbound = jsonrpc.read(line)
                    if isinstance(inbound, jsonrpc.Refused):
                        await self._send(inbound.answer)
                    elif isinstance(inbound, jsonrpc.Batch):
                        refusal = jsonrpc.batch_refusal(self.version)
                        if refusal is not None:
                            await self._send(refusal)
                        else:
                            batches.start_soon(self._batch, inbound.items)
                    else:
                        await self._to_sdk(inbound.message, line)
            # No request is added any more: the event is the one the last answer sets.
            with anyio.move_on_after(self.linger):
                await self.all_answered.wait()

    async def _to_sdk(self, message: jsonrpc.Message, line: str) -> None:
        method = message.get("method")
        if method is not None and "id" in message:
            if method == "initialize":
                self.initialize_ids.add(message["id"])
            self.unanswered.add(message["id"])
            self.all_answered = anyio.Event()
        elif method == "notifications/cancelled":  # a cancelled request gets no answer
            self._answered((message.get("params") or {}).get("requestId"))
        await self.to_sdk.send(line)

    async def _batch(self, items: list[Any]) -> None:
        answers = await jsonrpc.answer_batch(items, self._through_sdk)
        if answers:
            await self._send(answers)

    async def _through_sdk(self, message: jsonrpc.Message) -> jsonrpc.Message | None:
        if "method" not in message or "id" not in message:
            await self._to_sdk(message, json.dumps(message))
            return None  # a notification or a response: nothing to answer
        answered = self.pending[message["id"]] = anyio.Event()
        await self._to_sdk(message, json.dumps(message))
        await answered.wait()
        return self.answers.pop(message["id"])


@contextmanager
def _wire() -> Iterator[tuple[int, int]]:
    """The process's stdin and stdout for the protocol alone: their descriptors moved aside,
    fd 0 then reading the null device and fd 1 writing to stderr; restored on exit."""
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
        yield wire_in, wire_out
    finally:
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        for fd in (null, wire_in, wire_out):
            os.close(fd)


async def serve_framed(server: RecallMCP, linger: float) -> None:
    with _wire() as (fd_in, fd_out):
        wire_in = anyio.wrap_file(
            TextIOWrapper(os.fdopen(fd_in, "rb", closefd=False), encoding="utf-8", errors="replace")
        )
        wire_out = anyio.wrap_file(
            TextIOWrapper(os.fdopen(fd_out, "wb", closefd=False), encoding="utf-8")
        )
        framing = Framing(wire_in, wire_out, linger)
        # The task group inside the transport: cancelling it never cuts the transport's own
        # writer short in the middle of an answer.
        async with (
            stdio_server(framing, framing) as (read_stream, write_stream),  # type: ignore[arg-type]
            anyio.create_task_group() as reading,
        ):
            reading.start_soon(framing.pump)
            # MCPServer.run_stdio_async is these lines on the process's own stdin/stdout; the
            # SDK has no public way to hand it other streams.
            lowlevel = server._lowlevel_server
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
            # The server stopped: nothing reads what the wire still sends.
            reading.cancel_scope.cancel()


async def serve_stdio(settings: Settings, dsn: str, token: str) -> None:
    try:
        pools = await open_pools(settings, dsn)
    except (OSError, RecallError) as e:
        raise UsageError(f"cannot connect to the database: {e}") from None
    try:
        master = settings.master_key
        keys = KeyRing(
            pools.custom,
            master.get_secret_value() if master else None,
            timeout=settings.db_acquire_timeout,
        )
        db = open_session(pools, settings)
        try:
            reader = await reader_for_token(db, token)
        finally:
            await db.close()
        if reader is None:
            raise UsageError("RECALL_TOKEN is not a valid token (unknown, revoked or expired)")
        runtime = Runtime(settings, pools, keys, fixed_token=token)
        # Answers still owed when the input ends come within one request budget.
        await serve_framed(build_server(runtime), settings.request_timeout + 1)
    finally:
        await pools.close()
