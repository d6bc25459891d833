"""MCP with clients nobody here wrote (issue 33): what the wire carries, checked over raw HTTP
and raw stdio, each result against the tool's declared schemas, and the official TypeScript
SDK client (tests/mcp_client_ts) over both transports."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import jsonschema
import pytest

from app.errors import (
    BadUserInput,
    Forbidden,
    InvalidCursor,
    RecallError,
    SearchUnavailable,
    ServiceUnavailable,
    Timeout,
    Unauthenticated,
)
from app.settings import Settings
from tests.client import GraphQLClient
from tests.history_support import gid
from tests.mcp_support import RECALL, McpApp, mcp_app
from tests.mcp_wire import (
    ACCEPT,
    INITIALIZED,
    call,
    initialize,
    request,
    stderr_of,
    stdio_wire,
)
from tests.servers import start_serve, wait_ready

ROOT = Path(__file__).resolve().parents[2]
TS_CLIENT = Path(__file__).resolve().parents[1] / "mcp_client_ts"
CODES = {
    c.code
    for c in (
        RecallError,
        Unauthenticated,
        Forbidden,
        BadUserInput,
        InvalidCursor,
        SearchUnavailable,
        ServiceUnavailable,
        Timeout,
    )
}
NUL = "a\x00b"


@pytest.fixture
async def mcp(dsn: str, settings: Settings) -> AsyncIterator[McpApp]:
    async with mcp_app(settings, dsn) as app:
        yield app


@pytest.fixture
async def tokens(
    history_personas: None, issue_token: Any, db: asyncpg.Connection
) -> dict[str, str]:
    from app.data.tokens import issue_connector_token

    return {
        "member": await issue_token("member", "acme", "alice"),
        "agent": await issue_token("agent", "acme", "helper"),
        "connector": await issue_connector_token(db, "acme"),
    }


async def _post(mcp: McpApp, token: str | None, body: Any, **headers: str) -> Any:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with mcp.http(token) as http:
        return await http.post("/mcp", content=raw, headers={**ACCEPT, **headers})


async def _tool_schemas(mcp: McpApp, token: str) -> dict[str, dict[str, Any]]:
    answer = await _post(mcp, token, request(1, "tools/list"))
    return {t["name"]: t for t in answer.json()["result"]["tools"]}


def _check_against_schema(tool: dict[str, Any], arguments: dict[str, Any], result: Any) -> str:
    """Check one tools/call result as a strict client does; 'ok' or the error's code."""
    if not result.get("isError"):
        jsonschema.validate(arguments, tool["inputSchema"])
    if "structuredContent" in result:
        # What TS SDK 1.32 and the Inspector check: any structured content matches the
        # declared outputSchema, error or not.
        jsonschema.validate(result["structuredContent"], tool["outputSchema"])
    if not result.get("isError"):
        assert "structuredContent" in result
        return "ok"
    assert "structuredContent" not in result, result
    [block] = result["content"]
    code, _, message = str(block["text"]).partition(": ")
    assert code in CODES and message, block
    return code


async def _agent_calls(db: asyncpg.Connection) -> list[tuple[str, dict[str, Any], str]]:
    """Each agent tool once right, once wrong: (tool, arguments, expected outcome); `turn`
    is filled in with a turn start_turn returned."""
    dm, alice = await gid(db, "Scope", "dm-alice"), await gid(db, "Member", "alice")
    return [
        ("start_turn", {"conversation": dm, "requester": alice}, "ok"),
        ("start_turn", {"conversation": dm, "requester": alice, "window": 101}, "BAD_USER_INPUT"),
        ("start_turn", {"conversation": "general", "requester": "nobody"}, "FORBIDDEN"),
        ("search_history", {"turn": "TURN", "query": "Acme"}, "ok"),
        ("search_history", {"turn": "TURN", "query": "Acme", "limit": 21}, "BAD_USER_INPUT"),
        ("search_history", {"turn": "garbage", "query": "Acme"}, "FORBIDDEN"),
        ("post_reply", {"turn": "TURN", "body": "From a strict client"}, "ok"),
        ("post_reply", {"turn": "TURN", "body": "x", "client_id": ""}, "BAD_USER_INPUT"),
    ]


MEMBER_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("search_messages", {"query": "Acme", "limit": 2}, "ok"),
    ("search_messages", {"query": "Acme", "limit": 51}, "BAD_USER_INPUT"),
    ("search_messages", {"query": "Acme", "limit": "many"}, "BAD_USER_INPUT"),
    ("search_messages", {"query": "Acme", "cursor": "not-a-cursor"}, "INVALID_CURSOR"),
    ("read_conversation", {"message_id": "MESSAGE"}, "ok"),
    ("read_conversation", {"message_id": "MESSAGE", "before": 51}, "BAD_USER_INPUT"),
    ("read_conversation", {"message_id": "TWVzc2FnZTo5ODc2NTQ"}, "FORBIDDEN"),
]


async def test_tool_errors_carry_no_structured_content_that_breaks_the_output_schema(
    mcp: McpApp, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    """Finding 1: an error result's structured content ({code, message}) did not match the
    tool's outputSchema, so strict clients rejected the result and the model never saw the
    error. Every result, success and error, of every tool must validate against the tool's
    declared schemas, and an error must be text `CODE: message`."""
    message = await gid(db, "Message", "da1")
    outcomes = []
    tools = await _tool_schemas(mcp, tokens["member"])
    for n, (tool, arguments, expected) in enumerate(MEMBER_CALLS):
        arguments = {k: message if v == "MESSAGE" else v for k, v in arguments.items()}
        answer = (await _post(mcp, tokens["member"], call(n, tool, arguments))).json()
        outcomes.append((tool, _check_against_schema(tools[tool], arguments, answer["result"])))
        assert outcomes[-1] == (tool, expected), answer
    tools = await _tool_schemas(mcp, tokens["agent"])
    turn = None
    for n, (tool, arguments, expected) in enumerate(await _agent_calls(db)):
        arguments = {k: turn if v == "TURN" else v for k, v in arguments.items()}
        answer = (await _post(mcp, tokens["agent"], call(n, tool, arguments))).json()
        got = _check_against_schema(tools[tool], arguments, answer["result"])
        assert got == expected, answer
        if tool == "start_turn" and got == "ok":
            turn = answer["result"]["structuredContent"]["turn"]
        outcomes.append((tool, got))
    assert {t for t, o in outcomes if o == "ok"} == set(tools) | {
        "search_messages",
        "read_conversation",
    }


async def test_json_rpc_batches_are_answered_at_2025_03_26_and_refused_after_over_http(
    mcp: McpApp, tokens: dict[str, str]
) -> None:
    """Finding 2 (HTTP): a batch was a bare 400. At 2025-03-26 (the header, or none: its
    default) each request of a batch is answered, in one array; later versions refuse it with a
    JSON-RPC error; a batch of notifications is 202; a bad token is still 401."""
    batch = [
        request(1, "tools/list"),
        INITIALIZED,
        call(2, "search_messages", {"query": "Acme", "limit": 1}),
        call(3, "search_messages", {"query": "Acme", "limit": 51}),
        {"jsonrpc": "2.0", "id": 4},
    ]
    for headers in ({"mcp-protocol-version": "2025-03-26"}, {}):
        answer = await _post(mcp, tokens["member"], batch, **headers)
        assert answer.status_code == 200, answer.text
        by_id = {a["id"]: a for a in answer.json()}
        assert [a["id"] for a in answer.json()] == [1, 2, 3, 4]
        assert {t["name"] for t in by_id[1]["result"]["tools"]} == {
            "search_messages",
            "read_conversation",
        }
        assert by_id[2]["result"]["isError"] is False
        assert by_id[3]["result"]["content"][0]["text"].startswith("BAD_USER_INPUT: limit")
        assert by_id[4]["error"]["code"] == -32600
    notifications = await _post(mcp, tokens["member"], [INITIALIZED, INITIALIZED])
    assert notifications.status_code == 202
    for version in ("2025-06-18", "2025-11-25"):
        refused = await _post(mcp, tokens["member"], batch, **{"mcp-protocol-version": version})
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == -32600
        assert version in refused.json()["error"]["message"]
    empty = await _post(mcp, tokens["member"], [])
    assert empty.status_code == 400 and empty.json()["error"]["code"] == -32600
    unauthenticated = await _post(mcp, "rcm_w1.unknown", batch)
    assert unauthenticated.status_code == 401


async def test_json_rpc_batches_are_answered_at_2025_03_26_and_refused_after_over_stdio(
    dsn: str, tokens: dict[str, str]
) -> None:
    """Finding 2 (stdio): a batch line got no answer at all."""
    batch = [
        request(1, "tools/list"),
        call(2, "search_messages", {"query": "Acme", "limit": 1}),
        INITIALIZED,
        call(3, "search_messages", {"query": "Acme", "limit": 51}),
    ]
    async with stdio_wire(dsn, tokens["member"]) as wire:
        assert (await wire.handshake("2025-03-26"))["result"]["protocolVersion"] == "2025-03-26"
        await wire.send(batch)
        answers = await wire.receive()
        assert [a["id"] for a in answers] == [1, 2, 3]
        assert answers[1]["result"]["isError"] is False
        assert answers[2]["result"]["content"][0]["text"].startswith("BAD_USER_INPUT: limit")
        await wire.send([INITIALIZED])  # nothing to answer: the next answer is the ping's
        await wire.send(request(9, "ping"))
        assert (await wire.receive())["id"] == 9
    async with stdio_wire(dsn, tokens["member"]) as wire:
        assert (await wire.handshake("2025-06-18"))["result"]["protocolVersion"] == "2025-06-18"
        await wire.send(batch)
        refused = await wire.receive()
        assert refused["id"] is None and refused["error"]["code"] == -32600
        assert "2025-06-18" in refused["error"]["message"]


async def test_what_is_not_json_or_not_a_request_answers_a_json_rpc_error_over_http(
    mcp: McpApp, tokens: dict[str, str]
) -> None:
    """Finding 3 (HTTP): a non-request object answered -32602 with a pydantic dump of the
    input. Not JSON: -32700; JSON but not a message: -32600, nothing of it echoed."""
    garbage = await _post(mcp, tokens["member"], b"{not json")
    assert garbage.status_code == 400
    assert garbage.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error"},
    }
    for body in ({"hello": "secret-value"}, {"jsonrpc": "2.0", "method": 5}, "secret-value", 7):
        answer = await _post(mcp, tokens["member"], body)
        assert answer.status_code == 400
        assert answer.json()["error"] == {"code": -32600, "message": "Invalid Request"}
        assert "secret-value" not in answer.text and "pydantic" not in answer.text
    with_id = await _post(mcp, tokens["member"], {"jsonrpc": "1.0", "id": 5, "method": "x"})
    assert with_id.json()["id"] == 5


async def test_what_is_not_json_or_not_a_request_answers_a_json_rpc_error_over_stdio(
    dsn: str, tokens: dict[str, str]
) -> None:
    """Finding 3 (stdio): a line that was not JSON got no answer."""
    async with stdio_wire(dsn, tokens["member"]) as wire:
        await wire.handshake()
        await wire.send_line("this is not json")
        assert (await wire.receive()) == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error"},
        }
        await wire.send_line(b"\xff\xfe{")
        assert (await wire.receive())["error"]["code"] == -32700
        await wire.send({"hello": "secret-value"})
        invalid = await wire.receive()
        assert invalid["error"] == {"code": -32600, "message": "Invalid Request"}
        # The connection still serves.
        await wire.send(request(3, "tools/list"))
        assert len((await wire.receive())["result"]["tools"]) == 2


async def test_only_the_tools_capability_is_advertised_and_prompts_are_method_not_found(
    mcp: McpApp, dsn: str, tokens: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """Finding 4: empty prompts and resources were advertised, and prompts/get of an unknown
    name answered error code 0 with a traceback in the log."""
    caplog.set_level(logging.DEBUG)
    answer = (await _post(mcp, tokens["member"], initialize(1, "2025-06-18"))).json()
    assert set(answer["result"]["capabilities"]) == {"tools"}
    for method, params in (
        ("prompts/get", {"name": "nope"}),
        ("prompts/list", {}),
        ("resources/list", {}),
        ("resources/read", {"uri": "file:///etc/passwd"}),
        ("resources/templates/list", {}),
    ):
        refused = (await _post(mcp, tokens["member"], request(2, method, params))).json()
        assert refused["error"]["code"] == -32601, refused
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]
    async with stdio_wire(dsn, tokens["member"]) as wire:
        assert set((await wire.handshake())["result"]["capabilities"]) == {"tools"}
        await wire.send(request(2, "prompts/get", {"name": "nope"}))
        assert (await wire.receive())["error"]["code"] == -32601
    assert "Traceback" not in await stderr_of(wire)


async def test_a_401_names_the_protected_resource_metadata_and_it_is_served(
    mcp: McpApp, tokens: dict[str, str]
) -> None:
    """Finding 5: a 401 carried no resource_metadata and the RFC 9728 document was 404."""
    for token in (None, "rcm_w1.unknown"):
        refused = await _post(mcp, token, request(1, "tools/list"))
        assert refused.status_code == 401
        challenge = refused.headers["www-authenticate"]
        found = re.search(r'resource_metadata="([^"]+)"', challenge)
        assert challenge.startswith("Bearer ") and found, challenge
        assert found.group(1) == "http://127.0.0.1/.well-known/oauth-protected-resource/mcp"
    async with mcp.http() as http:
        for path in (
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
        ):
            metadata = await http.get(path)
            assert metadata.status_code == 200, path
            assert metadata.json() == {
                "resource": "http://127.0.0.1/mcp",
                "bearer_methods_supported": ["header"],
                "resource_name": "Recall",
            }


async def test_get_and_delete_on_mcp_are_405_not_an_endless_event_stream(
    mcp: McpApp, tokens: dict[str, str]
) -> None:
    """Finding 6: an authenticated GET /mcp opened an event stream that never closed."""
    for kind in ("member", "agent", "connector"):
        async with mcp.http(tokens[kind]) as http:
            for method in ("GET", "DELETE"):
                answer = await asyncio.wait_for(
                    http.request(method, "/mcp", headers={"accept": "text/event-stream"}), 5
                )
                assert answer.status_code == 405, (kind, method)
                assert answer.headers["allow"] == "POST"


async def test_nul_in_any_string_argument_is_bad_user_input_as_in_graphql(
    mcp: McpApp,
    dsn: str,
    client: GraphQLClient,
    db: asyncpg.Connection,
    tokens: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Finding 7: NUL in a string argument was INTERNAL_SERVER_ERROR with a traceback; GraphQL
    refuses the same input with BAD_USER_INPUT. One check (app.request.text.text_problem)."""
    caplog.set_level(logging.DEBUG)
    dm, alice = await gid(db, "Scope", "dm-alice"), await gid(db, "Member", "alice")
    turn = (
        await _post(
            mcp, tokens["agent"], call(1, "start_turn", {"conversation": dm, "requester": alice})
        )
    ).json()["result"]["structuredContent"]["turn"]
    member_cases = [
        ("search_messages", {"query": NUL}),
        ("search_messages", {"query": f"from:@{NUL}"}),
        ("search_messages", {"query": "Acme", "channel": NUL}),
        ("search_messages", {"query": "Acme", "author": NUL}),
        ("search_messages", {"query": "Acme", "cursor": NUL}),
        ("search_messages", {"query": "Acme", "time_zone": NUL}),
        ("read_conversation", {"message_id": NUL}),
    ]
    agent_cases = [
        ("start_turn", {"conversation": NUL, "requester": alice}),
        ("start_turn", {"conversation": dm, "requester": NUL}),
        ("search_history", {"turn": turn, "query": NUL}),
        ("post_reply", {"turn": turn, "body": NUL}),
        ("post_reply", {"turn": turn, "body": "ok", "client_id": NUL}),
    ]
    for token, cases in ((tokens["member"], member_cases), (tokens["agent"], agent_cases)):
        for n, (tool, arguments) in enumerate(cases):
            result = (await _post(mcp, token, call(n, tool, arguments))).json()["result"]
            assert result["isError"] is True, (tool, arguments)
            text = result["content"][0]["text"]
            assert text.startswith("BAD_USER_INPUT: ") and "NUL" in text, (tool, arguments, text)
    assert not [r for r in caplog.records if r.exc_info]
    graphql = await client.post(
        "query($q: String!) { messageSearch(q: $q, first: 1) { edges { cursor } } }",
        {"q": NUL},
        token=tokens["member"],
    )
    assert set(graphql.codes) == {"BAD_USER_INPUT"}
    async with stdio_wire(dsn, tokens["member"]) as wire:
        await wire.handshake()
        await wire.send(call(5, "search_messages", {"query": NUL}))
        text = (await wire.receive())["result"]["content"][0]["text"]
        assert text.startswith("BAD_USER_INPUT: query: ") and "NUL" in text


def _docs_stdio_configs() -> list[dict[str, Any]]:
    """The stdio configurations docs/mcp.md shows (the JSON blocks with a command)."""
    docs = (ROOT / "docs" / "mcp.md").read_text()
    found = []
    for block in re.findall(r"```json\n(.*?)```", docs, re.S):
        config = json.loads(block)
        server = config.get("mcpServers", {}).get("recall", {}) if "mcpServers" in config else {}
        if "command" in server:
            found.append(dict(server))
    assert found, "docs/mcp.md shows no stdio configuration"
    return found


async def _recall_mcp_in(folder: Path, env: dict[str, str], *lines: Any) -> tuple[int, str, str]:
    """`recall mcp` started in `folder` with only `env` (and PATH), as a desktop client starts
    it; `lines` written to its stdin, which then ends."""
    proc = await asyncio.create_subprocess_exec(
        str(RECALL),
        "mcp",
        env={"PATH": os.environ.get("PATH", ""), **env},
        cwd=folder,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    data = "".join(json.dumps(m) + "\n" for m in lines).encode()
    out, err = await asyncio.wait_for(proc.communicate(data), 60)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_recall_mcp_without_database_url_does_not_depend_on_the_folder_it_starts_in(
    tokens: dict[str, str], tmp_path: Path
) -> None:
    """Finding 8: without DATABASE_URL, `recall mcp` started in another folder than `recall
    serve`'s made a new, empty embedded cluster there (.recall/ in the client's folder) and
    then refused the token. It now exits 2 at once, naming the absolute folder it looked in and
    what to set, and makes nothing."""
    elsewhere = tmp_path / "client-folder"
    elsewhere.mkdir()
    code, out, err = await _recall_mcp_in(elsewhere, {"RECALL_TOKEN": tokens["member"]})
    assert code == 2 and out == ""
    assert str(elsewhere.resolve() / ".recall" / "pgdata") in err
    assert "DATABASE_URL" in err and "RECALL_DATA_DIR" in err
    assert list(elsewhere.iterdir()) == []
    absolute = tmp_path / "not-a-data-dir"
    code, _, err = await _recall_mcp_in(
        elsewhere, {"RECALL_TOKEN": tokens["member"], "RECALL_DATA_DIR": str(absolute)}
    )
    assert code == 2 and str(absolute / "pgdata") in err and not absolute.exists()


async def test_recall_mcp_answers_everything_written_before_its_input_ends(
    dsn: str, tokens: dict[str, str], tmp_path: Path
) -> None:
    """`… | recall mcp`: requests and a batch written, then stdin closed; every answer still
    comes (the server stops only once they are on the wire)."""
    env = {"DATABASE_URL": dsn, "RECALL_TOKEN": tokens["member"]}
    batch = [request(2, "ping"), call(3, "search_messages", {"query": "Acme", "limit": 1})]
    code, out, err = await _recall_mcp_in(
        tmp_path,
        env,
        initialize(0),
        INITIALIZED,
        request(1, "tools/list"),
        batch,
        request(4, "ping"),
    )
    answers = [json.loads(line) for line in out.splitlines()]
    ids = sorted(
        json.dumps(a["id"] if isinstance(a, dict) else [x["id"] for x in a]) for a in answers
    )
    assert code == 0 and ids == ["0", "1", "4", "[2, 3]"], (answers, err)


async def test_the_documented_stdio_configs_work_verbatim_from_any_folder(
    dsn: str, tokens: dict[str, str], tmp_path: Path
) -> None:
    """Finding 8 (docs): each stdio configuration docs/mcp.md shows names the command and the
    data location absolutely; the DATABASE_URL one, filled in, answers from another folder with
    nothing else in its environment."""
    configs = _docs_stdio_configs()
    assert {"DATABASE_URL" in c["env"] for c in configs} == {True, False}
    for server in configs:
        env = dict(server["env"])
        assert Path(server["command"]).is_absolute() and server["args"] == ["mcp"], server
        assert "DATABASE_URL" in env or Path(env["RECALL_DATA_DIR"]).is_absolute(), env
    [server] = [c for c in configs if "DATABASE_URL" in c["env"]]
    env = {**server["env"], "DATABASE_URL": dsn, "RECALL_TOKEN": tokens["member"]}
    elsewhere = tmp_path / "some" / "other" / "folder"
    elsewhere.mkdir(parents=True)
    code, out, err = await _recall_mcp_in(
        elsewhere, env, initialize(0), INITIALIZED, request(1, "tools/list")
    )
    answers = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and answers and "tools" in answers[-1].get("result", {}), (answers, err)
    assert [t["name"] for t in answers[-1]["result"]["tools"]] == [
        "search_messages",
        "read_conversation",
    ]
    assert list(elsewhere.iterdir()) == []


def _node() -> tuple[str, str] | None:
    node, npm = shutil.which("node"), shutil.which("npm")
    return (node, npm) if node and npm else None


async def test_the_typescript_sdk_client_over_both_transports(
    dsn: str, db: asyncpg.Connection, tokens: dict[str, str], tmp_path: Path
) -> None:
    """The official TypeScript SDK (pinned in tests/mcp_client_ts/package-lock.json) against
    `recall serve`'s /mcp and `recall mcp`: every tool's success and error results (each
    checked against the tool's declared schemas by the SDK itself and by client.mjs), batches,
    malformed lines and a bad token. CI installs it (`npm ci`, .ci/run) and sets
    RECALL_REQUIRE_NODE=1, so a missing node fails rather than skips."""
    tools = _node()
    if tools is None:
        if os.environ.get("RECALL_REQUIRE_NODE") == "1":
            pytest.fail("RECALL_REQUIRE_NODE=1 but node/npm are not installed")
        pytest.skip("node and npm are not installed")
    node, npm = tools
    if not (TS_CLIENT / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        install = await asyncio.create_subprocess_exec(
            npm, "ci", "--no-audit", "--no-fund", "--prefix", str(TS_CLIENT)
        )
        assert await install.wait() == 0
    fixture = {
        "member": tokens["member"],
        "agent": tokens["agent"],
        "message": await gid(db, "Message", "da1"),
        "conversation": await gid(db, "Scope", "dm-alice"),
        "requester": await gid(db, "Member", "alice"),
        "recall": str(RECALL),
        "database_url": dsn,
    }
    log = tmp_path / "server.log"
    server, base = await start_serve(dsn, log)
    try:
        await wait_ready(server, base, log, 30)
        fixture["url"] = f"{base}/mcp"
        proc = await asyncio.create_subprocess_exec(
            node,
            str(TS_CLIENT / "client.mjs"),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(json.dumps(fixture).encode()), 180)
    finally:
        server.terminate()
        await asyncio.wait_for(server.wait(), 15)
    report = out.decode()
    assert proc.returncode == 0, report + err.decode()
    summary = json.loads(report.strip().splitlines()[-1])
    assert summary["failures"] == [], summary
    for transport in ("http", "stdio"):
        checked = summary["checked"][transport]
        assert checked["ok"] == 5 and checked["errors"] >= 5, checked
        assert checked["schema_checked"] == checked["ok"] + checked["errors"]
