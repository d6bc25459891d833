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
from pathlib import Path
from typing import Any, NoReturn

import asyncpg

from app.errors import RecallError, UsageError
from app.settings import Settings, get_settings


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, not argparse's usage block: scripts grep stderr.
        self.exit(2, f"recall: {message} (see 'recall --help')\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="recall", description="Authorized search over conversation history.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    serve = sub.add_parser("serve", help="migrate, then serve GraphQL at /graphql")
    serve.add_argument("--host", default=None)
    serve.add_argument("--port", type=int, default=None)
    serve.add_argument(
        "--demo", action="store_true", help="load the demo workspace and print tokens"
    )
    serve.add_argument(
        "--demo-live",
        action="store_true",
        help="with --demo: replay a short stream of demo changes while serving",
    )

    sub.add_parser("migrate", help="apply pending migrations")

    imp = sub.add_parser("import", help="load a workspace fixture (one transaction)")
    imp.add_argument("file", type=Path)

    token = sub.add_parser(
        "token", help="print a bearer token (member/agent: KIND WORKSPACE KEY; connector WORKSPACE)"
    )
    token.add_argument("kind", choices=["member", "agent", "connector"])
    token.add_argument("workspace")
    token.add_argument("actor", nargs="?", default=None)

    apply = sub.add_parser("apply", help="apply a file of live changes (NDJSON), in batches")
    apply.add_argument("workspace")
    apply.add_argument("file", type=Path)
    apply.add_argument("--batch", type=int, default=None, help="changes per transaction")

    turn = sub.add_parser("turn", help="start a turn and print its token")
    turn.add_argument("workspace")
    turn.add_argument("agent")
    turn.add_argument("scope")
    turn.add_argument("requester")
    turn.add_argument("--trigger", default=None)
    turn.add_argument("--window", type=int, default=30)

    search = sub.add_parser("search", help="search readiness operations")
    search.add_argument(
        "operation", choices=["status", "backfill", "finalize", "promote", "ensure-ready"]
    )
    search.add_argument("--workspace", default=None)

    sub.add_parser("schema", help="print the GraphQL schema (SDL)")
    return p


def main(argv: list[str] | None = None) -> None:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "token" and (args.kind == "connector") != (args.actor is None):
        parser.error(
            "recall token connector WORKSPACE takes no key"
            if args.kind == "connector"
            else f"recall token {args.kind} WORKSPACE KEY needs the {args.kind}'s key"
        )
    if args.command == "serve" and args.demo_live and not args.demo:
        parser.error("--demo-live needs --demo")
    settings = get_settings()
    try:
        if args.command == "serve":
            from app.server import serve

            serve(
                settings, host=args.host, port=args.port, demo=args.demo, demo_live=args.demo_live
            )
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


def _fail(message: str) -> NoReturn:
    print(f"recall: {message}", file=sys.stderr)
    raise SystemExit(1)


def _run_with_database(
    settings: Settings,
    command: Callable[[asyncpg.Connection, argparse.Namespace], Awaitable[Any]],
    args: argparse.Namespace,
) -> None:
    from app.db import connect, resolve_database_url
    from app.migrate import migrate

    dsn = resolve_database_url(settings)

    async def run() -> Any:
        try:
            conn = await connect(dsn)
        except (OSError, asyncpg.PostgresError) as e:
            raise UsageError(f"cannot connect to the database: {e}") from None
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
    from app.fixtures.importer import import_fixture_file

    return await import_fixture_file(conn, args.file, progress=sys.stderr)


async def _token(conn: asyncpg.Connection, args: argparse.Namespace) -> Any:
    from app.data.tokens import issue_actor_token, issue_connector_token

    if args.kind == "connector":
        return await issue_connector_token(conn, args.workspace)
    return await issue_actor_token(conn, args.workspace, args.kind, args.actor)


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
    from app.history.turns import start_turn_by_keys

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
    from app.search.operations import run_operation

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
