"""The MCP server: Recall's tools on the official SDK's MCPServer, and its Streamable HTTP app.

- Each tool names the policy of app.access its domain function checks; tools/list shows a
  caller only the tools its token kind may use, and calling any other answers exactly like a
  tool that does not exist. search_history and post_reply are also an agent token's, naming a
  turn it started (app.mcp.tools.turn_reader).
- Each call runs like a /graphql request (app.api.view): one session from the process's pools,
  the request budget (RECALL_REQUEST_TIMEOUT) around it, the statement timeout on its
  connections. A RecallError is a tool error (isError) whose one text block is `CODE:
  message` (no structured content, which strict clients check against the outputSchema);
  anything else is "Internal server error": no stack trace or SQL reaches a client. String
  arguments are checked as GraphQL checks every String (a NUL is BAD_USER_INPUT).
- Only the tools capability is advertised; prompt and resource methods are not found.
- /metrics counts the calls by tool and outcome.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, TypeVar

from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import METHOD_NOT_FOUND, CallToolResult, TextContent, Tool, ToolAnnotations
from pydantic import Field, ValidationError

from app import access
from app.access import Policy
from app.data.readers import Reader, reader_for_token
from app.db import Pools
from app.errors import BadUserInput, RecallError, ServiceUnavailable, Timeout, Unauthenticated
from app.mcp import results, tools
from app.mcp.auth import RecallAccess, RecallTokenVerifier, Runtime
from app.mcp.http import McpEndpoint
from app.message_search.keys import KeyRing
from app.observability.metrics import observe_tool_call
from app.request.loaders import Loaders
from app.request.scope import open_session
from app.request.text import text_problem
from app.settings import Settings

_log = logging.getLogger("recall.mcp")

T = TypeVar("T")

READ_ONLY = ToolAnnotations(readOnlyHint=True, openWorldHint=False)


@dataclass(frozen=True, slots=True)
class ToolAccess:
    """Who may call a tool: its operation's policy, and whether an agent token may call it by
    naming a turn it started (it then acts as that turn)."""

    policy: Policy
    through_turn: bool = False

    def allows(self, kind: str) -> bool:
        return self.policy.allows(kind) or (
            self.through_turn and access.allows_through_turn(self.policy, kind)
        )


TOOLS: dict[str, ToolAccess] = {
    "search_messages": ToolAccess(access.MESSAGE_SEARCH),
    "read_conversation": ToolAccess(access.READ_CONVERSATION),
    "start_turn": ToolAccess(access.START_TURN),
    "search_history": ToolAccess(access.HISTORY_SEARCH, through_turn=True),
    "post_reply": ToolAccess(access.POST_REPLY, through_turn=True),
}


def _error(code: str, message: str) -> CallToolResult:
    """A tool error: `CODE: message` as its only content. No structured content: it would have
    to match the tool's outputSchema (a success's shape), and clients that check it (the
    TypeScript SDK, the Inspector) reject the whole result, so the model never sees why."""
    return CallToolResult(
        content=[TextContent(type="text", text=f"{code}: {message}")],
        is_error=True,
    )


def _argument_message(error: ValidationError) -> str:
    """Which arguments were wrong and why, never their values."""
    parts = []
    for e in error.errors():
        where = ".".join(str(p) for p in e["loc"]) or "arguments"
        parts.append(f"{where}: {e['msg']}")
    return "invalid arguments: " + "; ".join(parts)


def _argument_problem(arguments: dict[str, Any]) -> str | None:
    """The first string argument PostgreSQL text cannot hold (a NUL character), checked as
    GraphQL checks every String (app.request.text.text_problem), before the tool runs."""
    for name, value in arguments.items():
        values = value if isinstance(value, list) else [value]
        for v in values:
            problem = text_problem(v) if isinstance(v, str) else None
            if problem is not None:
                return f"{name}: {problem}"
    return None


# Capabilities the SDK's MCPServer advertises for its (here empty) prompt and resource
# managers; Recall serves tools only.
_NOT_SERVED = ("prompts", "resources", "completions")


async def tools_only(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """The SDK's middleware hook: advertise only the tools capability, and answer the prompt,
    resource and completion methods as the methods they are here: not found (-32601)."""
    if ctx.method.startswith(("prompts/", "resources/", "completion/")):
        raise MCPError(code=METHOD_NOT_FOUND, message="Method not found", data=ctx.method)
    result = await call_next(ctx)
    if ctx.method in ("initialize", "server/discover") and isinstance(result, dict):
        capabilities = result.get("capabilities")
        if isinstance(capabilities, dict):
            for name in _NOT_SERVED:
                capabilities.pop(name, None)
    return result


class RecallMCP(MCPServer[Any]):
    """MCPServer with Recall's listing and errors (through its public methods)."""

    def __init__(self, runtime: Runtime, **options: Any) -> None:
        # The SDK configures the root logger (logging.basicConfig with its own handler) unless
        # it already has a handler; Recall's logging is app.observability's, so it gets one
        # for the duration.
        root, placeholder = logging.getLogger(), logging.NullHandler()
        root.addHandler(placeholder)
        try:
            self._construct(**options)
        finally:
            root.removeHandler(placeholder)
        self.runtime = runtime

    def _construct(self, **options: Any) -> None:
        super().__init__(
            "recall",
            instructions="Authorized search over conversation history. A member token searches "
            "and reads what that person may read; an agent starts a turn and searches its own "
            "history for it (everything shown joins the turn's evidence), then replies.",
            version="1",
            middleware=[tools_only],
            **options,
        )

    # Who is calling ----------------------------------------------------------------------

    async def caller(self, db: Any) -> Reader:
        """The reader of the request's token (HTTP: verified by RecallTokenVerifier; stdio:
        RECALL_TOKEN, read again on every call so that revoking it takes effect at once)."""
        found = get_access_token()
        token = self.runtime.fixed_token
        if isinstance(found, RecallAccess):
            if found.reader is not None:
                return found.reader
            token = found.token
        reader = await reader_for_token(db, token) if token else None
        if reader is None:
            raise Unauthenticated("missing or unknown bearer token")
        return reader

    @asynccontextmanager
    async def request_scope(self) -> AsyncIterator[tools.Call]:
        runtime = self.runtime
        if runtime.pools is None or runtime.keys is None:
            raise ServiceUnavailable("the server is starting; try again shortly")
        db = open_session(runtime.pools, runtime.settings)
        try:
            reader = await self.caller(db)
            keys = await runtime.keys.keys()
            yield tools.Call(reader, db, keys, Loaders(db, reader))
        finally:
            await db.close()

    async def run_tool(self, name: str, body: Callable[[tools.Call], Awaitable[T]]) -> T:
        """A tool's body inside its request scope and the request budget."""
        budget = self.runtime.settings.request_timeout
        async with self.request_scope() as call:
            try:
                async with asyncio.timeout(budget):
                    return await body(call)
            except TimeoutError:
                call.db.broken = True  # a statement may still be running on it
                raise Timeout(f"the request took longer than {budget:g} s") from None

    # Listing and calling ------------------------------------------------------------------

    async def list_tools(self) -> list[Tool]:
        listed = await super().list_tools()
        try:
            async with self.request_scope() as call:
                kind = call.reader.kind
        except Unauthenticated:
            return []
        return [t for t in listed if (a := TOOLS.get(t.name)) is not None and a.allows(kind)]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        label = name if name in TOOLS else "unknown"
        try:
            allowed = TOOLS.get(name)
            if allowed is None or not allowed.allows(await self._kind()):
                # Exactly what the SDK answers for a tool it does not have.
                raise ToolError(f"Unknown tool: {name}")
            problem = _argument_problem(arguments)
            if problem is not None:
                raise BadUserInput(problem)
            result = await super().call_tool(name, arguments, context)
        except ToolError as e:
            cause = e.__cause__
            if isinstance(cause, RecallError):
                outcome, answer = cause.code, _error(cause.code, cause.message)
            elif isinstance(cause, ValidationError):
                outcome, answer = (
                    "BAD_USER_INPUT",
                    _error("BAD_USER_INPUT", _argument_message(cause)),
                )
            elif cause is None:
                outcome, answer = "unknown_tool", _error("BAD_USER_INPUT", str(e))
            else:
                _log.error("tool %s failed", label, exc_info=cause)
                outcome = "INTERNAL_SERVER_ERROR"
                answer = _error(outcome, "Internal server error")
            observe_tool_call(label, outcome)
            return answer
        except RecallError as e:
            observe_tool_call(label, e.code)
            return _error(e.code, e.message)
        observe_tool_call(label, "error" if getattr(result, "is_error", False) else "ok")
        return result

    async def _kind(self) -> str:
        found = get_access_token()
        if isinstance(found, RecallAccess) and found.reader is not None:
            return found.reader.kind
        async with self.request_scope() as call:
            return call.reader.kind


def build_server(runtime: Runtime, **options: Any) -> RecallMCP:
    """The server and its five tools (options: the SDK's auth settings, for HTTP)."""
    server = RecallMCP(runtime, **options)

    @server.tool(
        name="search_messages",
        description="Search the messages you may read (a member token): any of the words, "
        'newest first; `"an exact phrase"`, `-word` to exclude; operators `from:@key`, '
        '`from:"Display Name"`, `from:me`, `agents-of:me`, `in:#channel`, `in:@person`, '
        "`since:2026-03-01`, `until:`, `on:` and `-from:`/`-in:` to exclude (a query of "
        "operators only lists their messages). Same results as GraphQL messageSearch. "
        "Errors: BAD_USER_INPUT, INVALID_CURSOR, SEARCH_UNAVAILABLE.",
        annotations=READ_ONLY,
    )
    async def search_messages(
        query: Annotated[
            str, Field(description="Words and operators to find (at most 500 characters).")
        ],
        channel: Annotated[
            str | None, Field(description="Only this scope: a Scope id or a scope key.")
        ] = None,
        author: Annotated[
            str | None,
            Field(description="Only this author: a Member or Agent id, or a member key."),
        ] = None,
        since: Annotated[
            datetime | None, Field(description="Posted at or after (ISO 8601; no zone: UTC).")
        ] = None,
        until: Annotated[datetime | None, Field(description="Posted before (ISO 8601).")] = None,
        limit: Annotated[
            int | None,
            Field(
                description=f"Messages per page, 1-{tools.SEARCH_MAX} (default "
                f"{tools.SEARCH_DEFAULT}).",
                json_schema_extra={"minimum": 1, "maximum": tools.SEARCH_MAX},
            ),
        ] = None,
        cursor: Annotated[
            str | None, Field(description="next_cursor of the previous page of this search.")
        ] = None,
        time_zone: Annotated[
            str,
            Field(
                description="IANA time zone (Europe/Paris) in which date operators "
                "(since:2026-03-01) are whole days; default UTC."
            ),
        ] = "UTC",
    ) -> results.SearchMessagesResult:
        return await server.run_tool(
            "search_messages",
            lambda call: tools.search_messages(
                call,
                query=query,
                channel=channel,
                author=author,
                since=since,
                until=until,
                limit=limit,
                cursor=cursor,
                time_zone=time_zone,
            ),
        )

    @server.tool(
        name="read_conversation",
        description="The messages around one message, in order, as you may read them (a member "
        "token): open a search result in place. Messages you may not read are skipped.",
        annotations=READ_ONLY,
    )
    async def read_conversation(
        message_id: Annotated[str, Field(description="A Message id (from search_messages).")],
        before: Annotated[
            int | None,
            Field(
                description=f"Messages before it, 0-{tools.AROUND_MAX} (default "
                f"{tools.AROUND_DEFAULT}).",
                json_schema_extra={"minimum": 0, "maximum": tools.AROUND_MAX},
            ),
        ] = None,
        after: Annotated[
            int | None,
            Field(
                description=f"Messages after it, 0-{tools.AROUND_MAX} (default "
                f"{tools.AROUND_DEFAULT}).",
                json_schema_extra={"minimum": 0, "maximum": tools.AROUND_MAX},
            ),
        ] = None,
    ) -> results.ReadConversationResult:
        return await server.run_tool(
            "read_conversation",
            lambda call: tools.read_conversation(
                call, message_id=message_id, before=before, after=after
            ),
        )

    @server.tool(
        name="start_turn",
        description="Start a turn (an agent token): the conversation you answer in and the "
        "person you answer. Returns the turn's id for search_history and post_reply. FORBIDDEN "
        "when the agent is not in that conversation or the requester is not an active member.",
    )
    async def start_turn(
        conversation: Annotated[str, Field(description="A Scope id or a scope key.")],
        requester: Annotated[str, Field(description="A Member id or a member key.")],
        trigger_message: Annotated[
            str | None, Field(description="The Message id you respond to, in that conversation.")
        ] = None,
        window: Annotated[
            int | None,
            Field(
                description="Messages before the trigger already in your context, 0-100 "
                f"(default {tools.START_WINDOW}); searches leave them out.",
                json_schema_extra={"minimum": 0, "maximum": 100},
            ),
        ] = None,
    ) -> results.StartTurnResult:
        return await server.run_tool(
            "start_turn",
            lambda call: tools.start_turn(
                call,
                conversation=conversation,
                requester=requester,
                trigger_message=trigger_message,
                window=window,
            ),
        )

    @server.tool(
        name="search_history",
        description="Search your own history during a turn: what the turn's conversation may "
        "be shown, best first, each hit with its neighbors. Everything shown joins the turn's "
        "evidence (what your reply is checked against) and is audited. Same as GraphQL "
        "historySearch. Errors: BAD_USER_INPUT, FORBIDDEN, SEARCH_UNAVAILABLE.",
        annotations=READ_ONLY,
    )
    async def search_history(
        query: Annotated[str, Field(description="Words to find, any of them.")],
        turn: Annotated[
            str | None,
            Field(description="The Turn id start_turn returned (needed with an agent token)."),
        ] = None,
        speaker: Annotated[
            str | None,
            Field(
                description="Whose messages: anyone (default), requester or you.",
                json_schema_extra={"enum": ["anyone", "requester", "you"]},
            ),
        ] = None,
        since: Annotated[
            datetime | None, Field(description="Posted at or after (ISO 8601).")
        ] = None,
        until: Annotated[datetime | None, Field(description="Posted before (ISO 8601).")] = None,
        limit: Annotated[
            int | None,
            Field(
                description=f"Hits, 1-{tools.HISTORY_MAX} (default {tools.HISTORY_DEFAULT}).",
                json_schema_extra={"minimum": 1, "maximum": tools.HISTORY_MAX},
            ),
        ] = None,
    ) -> results.SearchHistoryResult:
        return await server.run_tool(
            "search_history",
            lambda call: tools.search_history(
                call,
                turn=turn,
                query=query,
                speaker=speaker,
                since=since,
                until=until,
                limit=limit,
            ),
        )

    @server.tool(
        name="post_reply",
        description="Post your reply in the turn's conversation. It is checked against the "
        "turn's evidence first: a reply built from what may not be shown there is not "
        "delivered (withheld_reason says why). Retrying with the same client_id posts once.",
    )
    async def post_reply(
        body: Annotated[str, Field(description="The reply, 1-20,000 characters.")],
        turn: Annotated[
            str | None,
            Field(description="The Turn id start_turn returned (needed with an agent token)."),
        ] = None,
        client_id: Annotated[
            str | None,
            Field(description="An id you choose per reply (1-200 characters): a retry posts once."),
        ] = None,
    ) -> results.PostReplyResult:
        return await server.run_tool(
            "post_reply",
            lambda call: tools.post_reply(call, turn=turn, body=body, client_id=client_id),
        )

    return server


def _security(settings: Settings) -> TransportSecuritySettings:
    """DNS-rebinding protection for a server on a loopback address (the default): only
    loopback Host and Origin headers. Bound to another address (a container's 0.0.0.0), the
    names clients use are not known here; the bearer token is what protects it."""
    loopback = ("127.0.0.1", "localhost", "::1")
    if settings.host not in loopback:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = ["127.0.0.1", "localhost", "[::1]"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*hosts, *(f"{h}:*" for h in hosts)],
        allowed_origins=[
            *(f"http://{h}" for h in hosts),
            *(f"http://{h}:*" for h in hosts),
            *settings.cors_origin_list,
        ],
    )


@dataclass
class HttpMcp:
    """/mcp of `recall serve`: the ASGI app to route there (the SDK's, inside
    app.mcp.http.McpEndpoint), the server, and what its lifespan must fill (runtime) and run
    (server.session_manager.run())."""

    app: McpEndpoint
    server: RecallMCP
    runtime: Runtime

    @asynccontextmanager
    async def running(self, pools: Pools, keys: KeyRing) -> AsyncIterator[None]:
        """The SDK's session manager running (in a task of its own: its task group must be
        left by the task that entered it, and a lifespan may be left by another, as an
        in-process client's is), the tools on the lifespan's pools and keys."""
        self.runtime.pools, self.runtime.keys = pools, keys
        started, stop = asyncio.Event(), asyncio.Event()

        async def manage() -> None:
            async with self.server.session_manager.run():
                started.set()
                await stop.wait()

        task = asyncio.create_task(manage())
        try:
            waiter = asyncio.create_task(started.wait())
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            if task.done():
                task.result()  # it failed to start: raise why
            yield
        finally:
            stop.set()
            await asyncio.gather(task, return_exceptions=True)
            self.runtime.pools = self.runtime.keys = None


def http_app(settings: Settings) -> HttpMcp:
    runtime = Runtime(settings)
    server = build_server(
        runtime,
        token_verifier=RecallTokenVerifier(runtime),
        # A resource server only: Recall's tokens are minted by `recall token` and startTurn,
        # not through OAuth; the issuer names this server.
        auth=AuthSettings(
            issuer_url=f"http://{settings.host}:{settings.port}",
            resource_server_url=None,
        ),
    )
    sdk_app = server.streamable_http_app(
        streamable_http_path="/mcp",
        # Stateless, JSON answers: no session lives between requests, so any worker process
        # (recall serve --workers N) answers any request, and a call is one POST.
        stateless_http=True,
        json_response=True,
        max_request_body_size=settings.max_request_bytes,
        transport_security=_security(settings),
    )
    return HttpMcp(McpEndpoint(sdk_app, settings.max_request_bytes), server, runtime)
