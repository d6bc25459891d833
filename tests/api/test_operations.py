"""Operations through HTTP: /metrics, request ids, security headers and CORS, what the logs
say (and do not), traces, token expiry and revocation, `recall token list|revoke`,
`recall --version` (docs/operations.md)."""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest

from app.observability.logging import JsonFormatter
from app.server import create_app, in_process
from app.settings import Settings, TraceSettings
from tests.client import GraphQLClient, graphql_client
from tests.personas import load_personas
from tests.test_cli import recall

SECRET = "zeppelinsecretterm"


@pytest.fixture
async def alice(db: asyncpg.Connection, issue_token: Any) -> str:
    await load_personas(db)
    token: str = await issue_token("member", "acme", "alice")
    return token


@pytest.fixture
def json_logs(caplog: pytest.LogCaptureFixture) -> Any:
    """The JSON lines Recall would print for what the test logs."""
    caplog.set_level(logging.INFO)
    formatter = JsonFormatter()

    def lines() -> list[dict[str, Any]]:
        return [json.loads(formatter.format(r)) for r in caplog.records]

    return lines


async def test_metrics_count_requests_by_operation_and_outcome(
    client: GraphQLClient, alice: str
) -> None:
    await client.gql("{ viewer { workspace { key } } }", token=alice)
    await client.post("{ viewer { workspace { key } } }", token="rcm_nope")
    response = await client.http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert 'recall_requests_total{operation="query:viewer",outcome="ok"}' in text
    assert 'outcome="unauthenticated"' in text
    assert 'recall_request_duration_seconds_bucket{le="0.005",operation="query:viewer"}' in text
    assert "recall_sql_duration_seconds_count" in text
    assert 'recall_pool_connections{pool="custom",state="max"} 10.0' in text
    assert 'recall_pool_connections{pool="generic",state="max"} 10.0' in text
    assert "recall_pool_waiting" in text
    assert re.search(r'recall_search_ready\{workspace="acme"\} [01]\.0', text)


async def test_rejections_by_limit_are_counted(client: GraphQLClient, alice: str) -> None:
    deep = "{ viewer { workspace { scopes { " + "parent { " * 12 + "key" + " }" * 12 + " } } } }"
    await client.post(deep, token=alice)
    await client.http.post(
        "/graphql",
        content=b"x" * (300 * 1024),
        headers={"authorization": f"Bearer {alice}", "content-type": "application/json"},
    )
    text = (await client.http.get("/metrics")).text
    assert re.search(r'recall_rejections_total\{limit="depth"\} [1-9]', text)
    assert re.search(r'recall_rejections_total\{limit="request_bytes"\} [1-9]', text)
    assert 'operation="invalid"' in text


async def test_applied_changes_are_counted(client: GraphQLClient, db: asyncpg.Connection) -> None:
    from app.data.tokens import issue_connector_token

    await load_personas(db)
    connector = await issue_connector_token(db, "acme")
    before = _sample((await client.http.get("/metrics")).text, "recall_change_batches_total")
    post = {"key": "m-live", "scope": "general", "author": "bob", "at": "2026-12-01T10:00:00Z"}
    await client.gql(
        "mutation($c: [ChangeInput!]!) { applyChanges(changes: $c) { applied } }",
        {"c": [{"postMessage": {**post, "body": "hello"}}]},
        token=connector,
    )
    text = (await client.http.get("/metrics")).text
    assert _sample(text, "recall_change_batches_total") == before + 1
    assert 'recall_changes_applied_total{result="applied"}' in text


def _sample(text: str, name: str) -> float:
    match = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(match.group(1)) if match else 0.0


async def test_request_id_is_made_or_honoured(client: GraphQLClient, alice: str) -> None:
    made = await client.http.get("/healthz")
    assert re.fullmatch(r"[0-9a-f]{32}", made.headers["x-request-id"])
    kept = await client.http.get("/healthz", headers={"x-request-id": "abc-123.x:y"})
    assert kept.headers["x-request-id"] == "abc-123.x:y"
    bad = await client.http.get("/healthz", headers={"x-request-id": 'no "quotes" here'})
    assert re.fullmatch(r"[0-9a-f]{32}", bad.headers["x-request-id"])


async def test_security_headers(client: GraphQLClient, alice: str) -> None:
    api = await client.http.post(
        "/graphql",
        json={"query": "{ viewer { workspace { key } } }"},
        headers={"authorization": f"Bearer {alice}"},
    )
    assert api.headers["x-content-type-options"] == "nosniff"
    assert api.headers["referrer-policy"] == "no-referrer"
    assert api.headers["cache-control"] == "no-store"
    page = await client.http.get("/graphql", headers={"accept": "text/html"})
    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert page.headers["x-content-type-options"] == "nosniff"


async def test_cors_is_off_by_default(client: GraphQLClient) -> None:
    origin = {"origin": "https://app.example"}
    simple = await client.http.get("/healthz", headers=origin)
    assert not any(h.startswith("access-control-") for h in simple.headers)
    preflight = await client.http.options(
        "/graphql", headers={**origin, "access-control-request-method": "POST"}
    )
    assert "access-control-allow-origin" not in preflight.headers


async def test_cors_allows_configured_origins(dsn: str, alice: str) -> None:
    settings = Settings(RECALL_CORS_ORIGINS="https://app.example, https://b.example")
    async with graphql_client(settings, dsn) as client:
        preflight = await client.http.options(
            "/graphql",
            headers={
                "origin": "https://app.example",
                "access-control-request-method": "POST",
                "access-control-request-headers": "authorization, content-type",
            },
        )
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "https://app.example"
        answer = await client.http.post(
            "/graphql",
            json={"query": "{ viewer { workspace { key } } }"},
            headers={"origin": "https://b.example", "authorization": f"Bearer {alice}"},
        )
        assert answer.headers["access-control-allow-origin"] == "https://b.example"
        other = await client.http.get("/healthz", headers={"origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers
        # A browser-based MCP client's preflight for /mcp (docs/mcp.md).
        mcp = await client.http.options(
            "/mcp",
            headers={
                "origin": "https://app.example",
                "access-control-request-method": "POST",
                "access-control-request-headers": "authorization, content-type, accept, "
                "mcp-protocol-version",
            },
        )
        assert mcp.status_code == 200
        assert mcp.headers["access-control-allow-origin"] == "https://app.example"


async def test_expected_error_is_one_line_without_document_or_variables(
    client: GraphQLClient, alice: str, json_logs: Any
) -> None:
    # An agent-only field with a member token: FORBIDDEN, an expected error.
    result = await client.post(
        'query($q: String!) { historySearch(query: $q) { count } other: viewer { member { name(x: "'
        + SECRET
        + '") } } }',
        {"q": SECRET},
        token=alice,
    )
    assert result.errors
    result = await client.post(
        "query($q: String!) { historySearch(query: $q) { count } }", {"q": SECRET}, token=alice
    )
    assert result.codes == ["FORBIDDEN"]
    lines = json_logs()
    errors = [line for line in lines if line["logger"] == "recall.graphql"]
    assert errors and all("exception" not in line for line in errors)
    assert any(line.get("code") == "FORBIDDEN" for line in errors)
    assert all(SECRET not in json.dumps(line) for line in lines), lines
    assert all(line["logger"] != "strawberry.execution" for line in lines)
    access = [line for line in lines if line["logger"] == "recall.access"]
    assert access and all(re.fullmatch(r"[0-9a-f]{32}", line["request_id"]) for line in access)


async def test_unexpected_error_has_a_redacted_traceback(
    client: GraphQLClient, alice: str, json_logs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.api.message_search.resolvers as resolvers

    async def fails(*_args: Any, **_kwargs: Any) -> Any:
        raise asyncpg.exceptions.DataError(f'syntax error in tsquery: "{SECRET}"')

    monkeypatch.setattr(resolvers, "message_search", fails)
    result = await client.post(
        "query Find($q: String!) { messageSearch(query: $q) { edges { node { key } } } "
        'again: messageSearch(query: "' + SECRET + '") { edges { node { key } } } }',
        {"q": SECRET},
        token=alice,
    )
    assert "INTERNAL_SERVER_ERROR" in result.codes
    lines = json_logs()
    unexpected = [line for line in lines if line["message"] == "unexpected error"]
    assert unexpected, lines
    line = unexpected[0]
    assert "Traceback" in line["exception"] and "DataError" in line["exception"]
    assert "SQLSTATE" in line["exception"]
    assert line["variables"] == ["q"]
    assert "messageSearch" in line["document"] and '"…"' in line["document"]
    assert line["operation"] == "query:messageSearch"
    assert all(SECRET not in json.dumps(one) for one in lines), lines


async def test_access_log_has_no_query_string(
    client: GraphQLClient, alice: str, json_logs: Any
) -> None:
    await client.http.get(
        "/graphql",
        params={"query": '{ messageSearch(query: "' + SECRET + '") { edges { node { key } } } }'},
        headers={"authorization": f"Bearer {alice}"},
    )
    access = [line for line in json_logs() if line["logger"] == "recall.access"]
    assert access[-1]["path"] == "/graphql" and access[-1]["operation"] == "query:messageSearch"
    assert all(SECRET not in json.dumps(line) for line in access)


async def test_expired_and_revoked_tokens_are_401(
    client: GraphQLClient, db: asyncpg.Connection, alice: str, dsn: str
) -> None:
    query = "{ viewer { workspace { key } } }"
    assert (await client.post(query, token=alice)).status == 200
    done = recall("token", "member", "acme", "bob", "--ttl", "1h", dsn=dsn)
    assert done.returncode == 0, done.stderr
    bob = done.stdout.strip()
    assert (await client.post(query, token=bob)).status == 200
    await db.execute(
        "update tokens set created_at = now() - interval '2 hours',"
        " expires_at = now() - interval '1 hour' where expires_at is not null"
    )
    expired = await client.post(query, token=bob)
    assert expired.status == 401 and expired.codes == ["UNAUTHENTICATED"]
    await db.execute("update tokens set revoked_at = now() where revoked_at is null")
    revoked = await client.post(query, token=alice)
    assert revoked.status == 401 and revoked.codes == ["UNAUTHENTICATED"]


async def test_token_list_and_revoke(
    dsn: str, db: asyncpg.Connection, client: GraphQLClient
) -> None:
    await load_personas(db)
    minted = recall("token", "member", "acme", "alice", dsn=dsn).stdout.strip()
    recall("token", "connector", "acme", "--ttl", "30d", dsn=dsn)
    listing = recall("token", "list", "--workspace", "acme", dsn=dsn)
    assert listing.returncode == 0, listing.stderr
    tokens = json.loads(listing.stdout)
    assert minted not in listing.stdout and "rcm_" not in listing.stdout
    kinds = {t["kind"]: t for t in tokens}
    assert kinds["member"]["actor"] == "alice" and kinds["member"]["state"] == "active"
    assert kinds["member"]["expires_at"] is None
    assert kinds["connector"]["actor"] is None and kinds["connector"]["expires_at"] is not None
    assert set(kinds["member"]) == {
        "id", "workspace", "kind", "actor", "turn_id", "created_at", "expires_at",
        "revoked_at", "state",
    }  # fmt: skip
    revoked = recall("token", "revoke", str(kinds["member"]["id"]), dsn=dsn)
    assert revoked.returncode == 0, revoked.stderr
    assert json.loads(revoked.stdout)["id"] == kinds["member"]["id"]
    after = {t["id"]: t for t in json.loads(recall("token", "list", dsn=dsn).stdout)}
    assert after[kinds["member"]["id"]]["state"] == "revoked"
    answer = await client.post("{ viewer { workspace { key } } }", token=minted)
    assert answer.status == 401
    unknown = recall("token", "revoke", "999999999", dsn=dsn)
    assert unknown.returncode == 1 and len(unknown.stderr.strip().splitlines()) == 1
    bad_ttl = recall("token", "member", "acme", "alice", "--ttl", "soon", dsn=dsn)
    assert bad_ttl.returncode == 2 and len(bad_ttl.stderr.strip().splitlines()) == 1


async def test_version_and_help(dsn: str) -> None:
    done = recall("--version", dsn=dsn)
    assert done.returncode == 0 and re.fullmatch(r"recall \S+\n", done.stdout)
    for args in (("--help",), ("serve", "--help"), ("token", "list", "--help")):
        shown = recall(*args, dsn=dsn)
        assert shown.returncode == 0 and "DATABASE_URL" in shown.stdout, shown


@pytest.fixture
async def traced(dsn: str) -> AsyncIterator[tuple[httpx.AsyncClient, Any]]:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from app.observability import tracing

    exporter = InMemorySpanExporter()
    provider = tracing.new_provider(Settings().tracing)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = create_app(Settings(), dsn, tracer_provider=provider)
    try:
        async with in_process(app) as asgi:
            transport = httpx.ASGITransport(app=asgi)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
                yield http, exporter
    finally:
        tracing.uninstrument()
        provider.shutdown()


async def test_traces_have_a_span_per_request_and_statement_without_query_text(
    traced: tuple[httpx.AsyncClient, Any], alice: str
) -> None:
    http, exporter = traced
    query = '{ messageSearch(query: "' + SECRET + '") { edges { node { key } } } }'
    answer = await http.get(
        "/graphql", params={"query": query}, headers={"authorization": f"Bearer {alice}"}
    )
    assert answer.status_code == 200
    spans = exporter.get_finished_spans()
    servers = [s for s in spans if s.kind.name == "SERVER"]
    assert len(servers) == 1
    server = servers[0]
    assert server.attributes["recall.operation"] == "query:messageSearch"
    assert server.attributes["recall.request_id"] == answer.headers["x-request-id"]
    statements = [s for s in spans if s.kind.name == "CLIENT"]
    assert statements and all(s.parent.span_id == server.context.span_id for s in statements)
    for span in spans:
        for value in (span.attributes or {}).values():
            assert SECRET not in str(value) and "query=" not in str(value), span.attributes
    texts = [str((s.attributes or {}).get("db.statement")) for s in statements]
    assert all(re.fullmatch(r"\w+ #[0-9a-f]{12}", t) for t in texts), texts


def _otel(monkeypatch: pytest.MonkeyPatch, **variables: str) -> TraceSettings:
    """The trace settings of an environment whose OTEL_* variables are exactly these."""
    for name in [n for n in os.environ if n.startswith("OTEL_")]:
        monkeypatch.delenv(name)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    return Settings().tracing


def test_tracing_is_off_without_otel_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.observability import tracing

    endpoint = "http://127.0.0.1:4318"
    assert not tracing.configured(_otel(monkeypatch))
    assert not tracing.configured(_otel(monkeypatch, OTEL_TRACES_EXPORTER="none"))
    assert not tracing.configured(
        _otel(monkeypatch, OTEL_SDK_DISABLED="true", OTEL_EXPORTER_OTLP_ENDPOINT=endpoint)
    )
    assert tracing.configured(_otel(monkeypatch, OTEL_EXPORTER_OTLP_ENDPOINT=endpoint))
    assert tracing.provider_from_environment(_otel(monkeypatch)) is None


def test_traces_asked_for_without_the_otel_extra_are_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from app.errors import UsageError
    from app.observability import tracing

    endpoint = _otel(monkeypatch, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:4318")
    tracing.check_configuration(endpoint)  # installed here (the dev extra)
    monkeypatch.setattr(tracing, "_OTEL_MODULES", ("opentelemetry.not_installed",))
    with pytest.raises(UsageError, match=r"recall\[otel\]"):
        tracing.check_configuration(endpoint)
    tracing.check_configuration(_otel(monkeypatch))  # tracing off: nothing to install


def test_serve_with_an_unknown_exporter_exits_with_one_line(
    dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin")
    done = recall("serve", "--port", "1", dsn=dsn)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "recall: OTEL_TRACES_EXPORTER: unsupported exporter 'zipkin' (otlp, console)"
    ]


def test_the_base_install_imports_no_opentelemetry(dsn: str) -> None:
    """Tracing is the optional `otel` extra: serving without OTEL_* never imports it. (Only
    the no-op API, which the MCP SDK depends on and imports, is part of the base install.)"""
    import subprocess
    import sys

    script = (
        "import sys; from app.server import create_app; from app.settings import Settings; "
        "from app.observability import tracing; "
        "settings = Settings(); "
        "create_app(settings, sys.argv[1], "
        "tracer_provider=tracing.provider_from_environment(settings.tracing)); "
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')"
        " and m.split('.')[1:2] in (['sdk'], ['exporter'], ['instrumentation'])))"
    )
    # Tracing off: no OTEL_* variable reaches it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-c", script, dsn], capture_output=True, text=True, check=False, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
