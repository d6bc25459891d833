"""The `recall` command line (docs/cli.md).

Every command: a bad argument or file exits non-zero with one clear line on stderr and changes
nothing; long work reports progress on stderr; machine-readable results go to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, NoReturn

import asyncpg

from app.errors import RecallError, UsageError
from app.settings import Settings, get_settings


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, not argparse's usage block: scripts grep stderr.
        self.exit(2, f"recall: {message} (see 'recall --help')\n")


class _Help(argparse.RawDescriptionHelpFormatter):
    """Epilogs (environment variables) kept as written; each help names its default."""


_DATABASE_ENV = """environment:
  DATABASE_URL       PostgreSQL to use (default: unset, the embedded server)
  RECALL_DATA_DIR    where the embedded server keeps its data (default: .recall)"""

_SERVE_ENV = f"""{_DATABASE_ENV}
  RECALL_HOST, RECALL_PORT        where to listen (default: 127.0.0.1, 8000)
  RECALL_WORKERS                  processes serving the port (default: 1)
  RECALL_POOL_MIN, RECALL_POOL_MAX  asyncpg pool size, per process (default: 1, 10)
  RECALL_MASTER_KEY               keys the audit digests (default: unset, empty digests)
  RECALL_MAX_REQUEST_BYTES        larger bodies get 413 (default: 262144)
  RECALL_EXPOSE_STATEMENT_COUNT   x-recall-statements headers (default: false)
  RECALL_LOG_FORMAT               json or text (default: json)
  RECALL_LOG_LEVEL                debug, info, warning, error (default: info)
  RECALL_CORS_ORIGINS             allowed browser origins, comma-separated (default: none, CORS off)
  OTEL_*                          OpenTelemetry traces, off unless set; needs recall[otel]"""

_TTL_HELP = "time to live, e.g. 3600, 90m, 12h, 30d (default: never expires)"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("recall")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "unknown"


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="recall",
        description="Authorized search over conversation history (docs/cli.md).",
        formatter_class=_Help,
        epilog=_DATABASE_ENV,
    )
    p.add_argument("--version", action="version", version=f"recall {_version()}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    def command(name: str, help: str, epilog: str = _DATABASE_ENV) -> argparse.ArgumentParser:
        return sub.add_parser(
            name, help=help, description=help, formatter_class=_Help, epilog=epilog
        )

    serve = command("serve", "migrate, then serve GraphQL at /graphql", _SERVE_ENV)
    serve.add_argument(
        "--host", default=None, help="address to listen on (default: RECALL_HOST, 127.0.0.1)"
    )
    serve.add_argument(
        "--port", type=int, default=None, help="port to listen on (default: RECALL_PORT, 8000)"
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes serving the port, each with its own pool (default: RECALL_WORKERS, 1)",
    )
    serve.add_argument(
        "--demo",
        action="store_true",
        help="load the demo workspace and print its tokens, reused across starts (default: off)",
    )
    serve.add_argument(
        "--demo-live",
        action="store_true",
        help="with --demo: replay a short stream of demo changes while serving (default: off)",
    )

    command("migrate", "apply pending migrations")

    imp = command("import", "load a workspace fixture (one transaction)")
    imp.add_argument("file", type=Path, help="the fixture, JSON (docs/fixtures.md)")

    token = command("token", "mint, list or revoke bearer tokens")
    kinds = token.add_subparsers(dest="kind", required=True, parser_class=_Parser, metavar="KIND")
    for kind, what in (("member", "a person"), ("agent", "an agent")):
        mint = kinds.add_parser(
            kind,
            help=f"mint a token for {what} and print it",
            description=f"Mint a token for {what} and print it (shown once).",
            formatter_class=_Help,
            epilog=_DATABASE_ENV,
        )
        mint.add_argument("workspace", help="workspace key")
        mint.add_argument("actor", metavar="KEY", help=f"the {kind}'s key")
        mint.add_argument("--ttl", default=None, help=_TTL_HELP)
    connector = kinds.add_parser(
        "connector",
        help="mint a workspace's connector token (applyChanges) and print it",
        description="Mint a connector token (applyChanges; reads no messages) and print it.",
        formatter_class=_Help,
        epilog=_DATABASE_ENV,
    )
    connector.add_argument("workspace", help="workspace key")
    connector.add_argument("--ttl", default=None, help=_TTL_HELP)
    listing = kinds.add_parser(
        "list",
        help="list tokens as JSON (ids, kinds, actors, dates; never the token)",
        description="List tokens as JSON: id, workspace, kind, actor, turn_id, created_at,"
        " expires_at, revoked_at, state (active, expired, revoked). Never the token.",
        formatter_class=_Help,
        epilog=_DATABASE_ENV,
    )
    listing.add_argument(
        "--workspace", default=None, help="only this workspace's tokens (default: all)"
    )
    revoke = kinds.add_parser(
        "revoke",
        help="revoke a token by id (it stops working at once)",
        description="Revoke a token by its id (from `recall token list`); idempotent.",
        formatter_class=_Help,
        epilog=_DATABASE_ENV,
    )
    revoke.add_argument("id", type=int, help="the token's id")

    apply = command("apply", "apply a file of live changes (NDJSON), in batches")
    apply.add_argument("workspace", help="workspace key")
    apply.add_argument("file", type=Path, help="one ChangeInput JSON object a line")
    apply.add_argument(
        "--batch", type=int, default=None, help="changes per transaction (default: 500)"
    )

    turn = command("turn", "start a turn and print its token")
    turn.add_argument("workspace", help="workspace key")
    turn.add_argument("agent", help="the agent's key")
    turn.add_argument("scope", help="the scope (channel, DM, thread) key the turn answers in")
    turn.add_argument("requester", help="the key of the person who asked")
    turn.add_argument(
        "--trigger", default=None, help="key of the message that triggered it (default: none)"
    )
    turn.add_argument(
        "--window", type=int, default=30, help="messages of context loaded, 0-100 (default: 30)"
    )

    search = command("search", "search readiness operations")
    search.add_argument(
        "operation",
        choices=["status", "backfill", "finalize", "promote", "ensure-ready"],
        help="status | backfill | finalize | promote | ensure-ready (docs/cli.md)",
    )
    search.add_argument(
        "--workspace",
        default=None,
        help="workspace key; backfill, finalize and promote need it (default: all workspaces)",
    )

    command(
        "mcp",
        "serve MCP over stdio for the token in RECALL_TOKEN (docs/mcp.md)",
        _DATABASE_ENV
        + "\n  RECALL_TOKEN       the member, agent or turn token to act as (required)",
    )

    command("schema", "print the GraphQL schema (SDL); needs no database", "")
    return p


def parse_ttl(text: str | None) -> timedelta | None:
    """`3600`, `90s`, `90m`, `12h`, `30d` -> a positive timedelta."""
    if text is None:
        return None
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    value = text.strip().lower()
    scale = units.get(value[-1:])
    number = value[:-1] if scale is not None else value
    if not number.isdigit() or int(number) <= 0:
        raise UsageError(f"--ttl: '{text}' is not a positive duration like 3600, 90m, 12h, 30d")
    return timedelta(seconds=int(number) * (scale or 1))


def main(argv: list[str] | None = None) -> None:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "serve" and args.demo_live and not args.demo:
        parser.error("--demo-live needs --demo")
    if args.command == "serve" and args.workers is not None and args.workers < 1:
        parser.error("--workers must be at least 1")
    try:
        if args.command == "token" and args.kind in ("member", "agent", "connector"):
            args.ttl = parse_ttl(args.ttl)
    except UsageError as e:
        parser.error(str(e))
    settings = get_settings()
    try:
        if args.command == "serve":
            from app.server import serve

            workers = settings.workers if args.workers is None else args.workers
            if args.demo_live and workers > 1:
                # The replay would run once per process.
                parser.error("--demo-live needs a single worker")
            serve(
                settings,
                host=args.host,
                port=args.port,
                demo=args.demo,
                demo_live=args.demo_live,
                workers=workers,
            )
        elif args.command == "mcp":
            _mcp(settings)
        elif args.command == "schema":
            from app.api.schema import schema_sdl

            sys.stdout.write(schema_sdl())
        else:
            _run_with_database(settings, _COMMANDS[args.command], args)
    except UsageError as e:
        _fail(str(e))
    except RecallError as e:
        _fail(e.message)
    except KeyboardInterrupt:
        _fail("interrupted")


def _mcp(settings: Settings) -> None:
    """`recall mcp`: exit 2 with one line when RECALL_TOKEN is missing or not a valid token;
    stdout carries only the protocol."""
    from app.db import resolve_database_url
    from app.mcp.stdio import serve_stdio
    from app.migrate import migrate
    from app.observability.logging import configure_logging

    token = settings.mcp_token.get_secret_value().strip() if settings.mcp_token else ""
    if not token:
        print("recall: mcp needs RECALL_TOKEN (a member, agent or turn token)", file=sys.stderr)
        raise SystemExit(2)
    if settings.database_url is None:
        # An MCP client starts `recall mcp` in a folder of its choosing (a desktop app: its
        # own, or /). A new embedded cluster there could hold no token, so none is made: say
        # where it looked and what to set instead.
        from app.embedded_db import data_folder

        folder = data_folder(settings.recall_data_dir)
        if not folder.is_dir():
            print(
                f"recall: mcp found no database: DATABASE_URL is not set and there is no "
                f"embedded PostgreSQL in {folder}; set DATABASE_URL, or RECALL_DATA_DIR to the "
                "absolute folder `recall serve` uses (docs/mcp.md)",
                file=sys.stderr,
            )
            raise SystemExit(2)
    configure_logging(settings.log_format, settings.log_level)
    dsn = resolve_database_url(settings)

    async def run() -> None:
        conn = await _connected(dsn)
        try:
            await migrate(conn)
        finally:
            await conn.close()
        await serve_stdio(settings, dsn, token)

    try:
        asyncio.run(run())
    except UsageError as e:
        print(f"recall: {e}", file=sys.stderr)
        raise SystemExit(2) from None


async def _connected(dsn: str) -> asyncpg.Connection:
    """A connection for one command; a database that cannot be reached is a UsageError (one
    line, no traceback)."""
    from app.db import connect

    try:
        return await connect(dsn)
    except (OSError, asyncpg.PostgresError) as e:
        raise UsageError(f"cannot connect to the database: {e}") from None


def _fail(message: str) -> NoReturn:
    print(f"recall: {message}", file=sys.stderr)
    raise SystemExit(1)


def _run_with_database(
    settings: Settings,
    command: Callable[[asyncpg.Connection, argparse.Namespace], Awaitable[Any]],
    args: argparse.Namespace,
) -> None:
    from app.db import resolve_database_url
    from app.migrate import migrate

    dsn = resolve_database_url(settings)

    args.dsn = dsn

    async def run() -> Any:
        conn = await _connected(dsn)
        try:
            if args.command != "migrate":
                await migrate(conn)
            return await command(conn, args)
        finally:
            await conn.close()

    result = asyncio.run(run())
    if result is not None:
        if isinstance(result, str):
            print(result)
        else:
            print(json.dumps(result, indent=2, default=str))


async def _migrate(conn: asyncpg.Connection, args: argparse.Namespace) -> Any:
    from app.migrate import migrate

    applied = await migrate(conn)
    return {"applied": applied}


async def _import(conn: asyncpg.Connection, args: argparse.Namespace) -> Any:
    from app.workspace_import.importer import import_fixture_file

    # The DSN lets the importer open a second connection for the documents' vectors.
    return await import_fixture_file(conn, args.file, progress=sys.stderr, dsn=args.dsn)


async def _token(conn: asyncpg.Connection, args: argparse.Namespace) -> Any:
    from app.data import tokens

    if args.kind == "list":
        return await tokens.list_tokens(conn, args.workspace)
    if args.kind == "revoke":
        return await tokens.revoke_token(conn, args.id)
    if args.kind == "connector":
        return await tokens.issue_connector_token(conn, args.workspace, ttl=args.ttl)
    return await tokens.issue_actor_token(conn, args.workspace, args.kind, args.actor, ttl=args.ttl)


async def _apply(conn: asyncpg.Connection, args: argparse.Namespace) -> Any:
    from app.changes.stream import DEFAULT_BATCH, apply_file

    return await apply_file(
        conn,
        args.workspace,
        args.file,
        batch_size=DEFAULT_BATCH if args.batch is None else args.batch,
        progress=sys.stderr,
    )


async def _turn(conn: asyncpg.Connection, args: argparse.Namespace) -> Any:
    from app.history_search.turns import start_turn_by_keys

    return await start_turn_by_keys(
        conn,
        workspace_key=args.workspace,
        agent_key=args.agent,
        scope_key=args.scope,
        requester_key=args.requester,
        trigger_key=args.trigger,
        window=args.window,
    )


async def _search(conn: asyncpg.Connection, args: argparse.Namespace) -> Any:
    from app.message_search.operations import run_operation

    return await run_operation(conn, args.operation, args.workspace, log=sys.stderr)


_COMMANDS: dict[str, Callable[[asyncpg.Connection, argparse.Namespace], Awaitable[Any]]] = {
    "migrate": _migrate,
    "import": _import,
    "token": _token,
    "apply": _apply,
    "turn": _turn,
    "search": _search,
}


if __name__ == "__main__":
    main()
