"""Numbered plain-SQL migrations, applied in order under an advisory lock.

The files live in the repository's top-level `migrations/` folder, which pyproject.toml ships as
the package `app.migrations`; they are read through importlib.resources, so an editable install,
an installed wheel and a Docker image all find the same files wherever they run from. Finding
none is an error, never "nothing to apply": an empty database must not look migrated.

Each applied file is recorded with its SHA-256; a file that changed after it was applied is
refused, because the database would no longer match what the code expects. A file is sent one
statement at a time (split_statements, at the end: Citus needs it), in one transaction.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable

import asyncpg

from app.errors import RecallError

# Arbitrary constant: every Recall process migrating the same database takes this lock.
_LOCK_KEY = 0x5245_4341_4C4C
_NAME = re.compile(r"^(\d{3,})_[a-z0-9_]+\.sql$")


class MigrationError(RecallError):
    """No migrations were found, one could not be applied, or an applied one was edited.

    A RecallError, so the CLI reports it as one line on stderr and exits non-zero.
    """


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def packaged_migrations() -> Traversable:
    """The migrations shipped with the code: the package `app.migrations` (`migrations/`)."""
    try:
        return files("app.migrations")
    except ModuleNotFoundError:
        raise MigrationError(
            "the package app.migrations is not installed: reinstall Recall (pip install .)"
        ) from None


def load_migrations(source: Traversable | None = None) -> list[Migration]:
    """Every migration in `source` (default: the packaged ones), in version order."""
    root = packaged_migrations() if source is None else source
    try:
        entries = sorted(root.iterdir(), key=lambda entry: entry.name)
    except OSError as e:
        raise MigrationError(f"cannot read migrations from {root}: {e}") from None
    found: list[Migration] = []
    for entry in entries:
        if not entry.name.endswith(".sql") or entry.name == "schema.sql":
            continue  # the package's __init__.py, caches; the generated schema (scripts/schema-sql)
        match = _NAME.match(entry.name)
        if not match:
            raise MigrationError(f"migration file name not understood: {entry.name}")
        found.append(Migration(int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    if not found:
        raise MigrationError(
            f"no migrations found in {root}: the installation is incomplete "
            "(app.migrations should hold the *.sql files of migrations/)"
        )
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise MigrationError("two migrations share a version number")
    return found


_BOOKKEEPING = """
create table if not exists schema_migrations (
    version integer primary key,
    name text not null,
    checksum text not null,
    applied_at timestamptz not null default now()
)
"""


async def migrate(conn: asyncpg.Connection, source: Traversable | None = None) -> list[str]:
    """Apply pending migrations; return the names applied. Safe to run concurrently.

    Raises MigrationError before touching the database when `source` holds no migrations.
    """
    migrations = load_migrations(source)
    applied_now: list[str] = []
    await conn.execute("select pg_advisory_lock($1)", _LOCK_KEY)
    try:
        await conn.execute(_BOOKKEEPING)
        rows = await conn.fetch("select version, name, checksum from schema_migrations")
        applied = {r["version"]: r for r in rows}
        citus = await conn.fetchval(
            "select exists (select 1 from pg_extension where extname = 'citus')"
        )
        for migration in migrations:
            record = applied.get(migration.version)
            if record is not None:
                if record["checksum"] != migration.checksum:
                    raise MigrationError(
                        f"migration {migration.name} was changed after it was applied; "
                        "add a new migration instead of editing an applied one"
                    )
                continue
            async with conn.transaction():
                if citus:
                    # A migration of a database already distributed may create triggers on
                    # its distributed tables; they run on the shards (docs/scale.md).
                    await conn.execute("set local citus.enable_unsafe_triggers = on")
                    # A migration may change a distributed table's rows and then replace a
                    # function Citus propagates: that needs one connection per worker for the
                    # whole transaction, not parallel ones.
                    await conn.execute("set local citus.multi_shard_modify_mode = 'sequential'")
                # One statement at a time (split_statements, below: Citus refuses some DDL on
                # a distributed table inside a string of several commands).
                for statement in split_statements(migration.sql):
                    await conn.execute(statement)
                await conn.execute(
                    "insert into schema_migrations (version, name, checksum) values ($1, $2, $3)",
                    migration.version,
                    migration.name,
                    migration.checksum,
                )
            applied_now.append(migration.name)
        # On a Citus coordinator: distribute what is not distributed yet (docs/scale.md). Not
        # part of the returned names, which are exactly the migration files applied.
        await distribute(conn)
    finally:
        await conn.execute("select pg_advisory_unlock($1)", _LOCK_KEY)
    return applied_now


async def pending(conn: asyncpg.Connection, source: Traversable | None = None) -> list[str]:
    """Names of migrations not yet applied (for /readyz)."""
    exists = await conn.fetchval("select to_regclass('schema_migrations') is not null")
    done: set[int] = set()
    if exists:
        done = {r["version"] for r in await conn.fetch("select version from schema_migrations")}
    return [m.name for m in load_migrations(source) if m.version not in done]


# Citus (docs/scale.md). Every table is distributed by its workspace and colocated with the
# others, so that a workspace's rows share one shard group and each statement that names its
# workspace is a single-shard router query. workspaces is distributed by its own id.
_REFERENCE_TABLES = ("workspace_keys", "recall_secrets")
_LOCAL_TABLES = ("schema_migrations",)  # the coordinator's bookkeeping
# Unique keys that do not include the distribution column: Citus cannot enforce them. Each has
# a routable replacement (migrations/015): workspace_keys for workspaces.key, the unique
# (workspace_id, token_hash) index for tokens.token_hash.
_UNROUTABLE_UNIQUES = (("workspaces", "workspaces_key_key"), ("tokens", "tokens_token_hash_key"))


async def is_citus_coordinator(conn: asyncpg.Connection) -> bool:
    """The citus extension exists in this database and it has primary worker nodes."""
    if not await conn.fetchval(
        "select exists (select 1 from pg_extension where extname = 'citus')"
    ):
        return False
    workers: int = await conn.fetchval(
        "select count(*) from pg_dist_node where noderole = 'primary' and groupid > 0"
    )
    return workers > 0


async def distribute(conn: asyncpg.Connection) -> list[str]:
    """On a Citus coordinator, distribute every table not distributed yet; a no-op elsewhere
    (plain PostgreSQL, or a Citus database without workers) and when all are distributed.

    Citus distributes a table only if every foreign key it has points to a table already
    distributed and colocated (or to a reference table), which the schema's cycles (workspaces
    and namespaces, scopes and messages by root) make impossible in any order. So the foreign
    keys of the tables still to distribute are dropped, every table is distributed, and the
    same keys are added back (and validated) in the same transaction; so are their triggers,
    which must not fire while a table's existing rows are copied into its shards.
    """
    if not await is_citus_coordinator(conn):
        return []
    # Citus cannot plan a distributed statement from a generic plan of a PL/pgSQL function's
    # query ("could not create distributed plan"): on a cluster the token's reader is planned
    # for its arguments like every other statement (migrations/021, once it is applied).
    if await conn.fetchval(
        "select to_regprocedure('recall_token_reader(bytea, bigint)') is not null"
    ):
        await conn.execute(
            "alter function recall_token_reader(bytea, bigint)"
            " set plan_cache_mode = 'force_custom_plan'"
        )
    tables = [
        r["relname"]
        for r in await conn.fetch(
            """
            select c.relname from pg_class c
            join pg_namespace n on n.oid = c.relnamespace
            where n.nspname = current_schema() and c.relkind in ('r', 'p')
              and not exists (select 1 from pg_dist_partition p where p.logicalrelid = c.oid)
              and not relation_is_a_known_shard(c.oid)  -- the coordinator's reference shards
            order by c.relname
            """
        )
        if r["relname"] not in _LOCAL_TABLES
    ]
    if not tables:
        return []
    async with conn.transaction():
        # Table triggers run on the shards (the search sidecar and lineage cache triggers).
        await conn.execute("set local citus.enable_unsafe_triggers = on")
        await conn.execute("set local citus.multi_shard_modify_mode = 'sequential'")
        keys = await conn.fetch(
            """
            select con.conrelid::regclass::text as tbl, con.conname,
                   pg_get_constraintdef(con.oid) as def
            from pg_constraint con
            where con.contype = 'f' and con.conrelid::regclass::text = any($1::text[])
            order by con.conrelid::regclass::text, con.conname
            """,
            tables,
        )
        for key in keys:
            await conn.execute(f'alter table "{key["tbl"]}" drop constraint "{key["conname"]}"')
        # The table triggers go too, and come back after: distributing a table that has rows
        # (an existing database) copies them into its shards, and the triggers would fire on
        # that copy: index documents already indexed, count terms already counted, give a
        # workspace a second readiness row, and reach tables not distributed yet.
        triggers = await conn.fetch(
            """
            select t.tgrelid::regclass::text as tbl, t.tgname, pg_get_triggerdef(t.oid) as def
            from pg_trigger t
            where not t.tgisinternal and t.tgenabled = 'O'
              and t.tgrelid::regclass::text = any($1::text[])
            order by 1, 2
            """,
            tables,
        )
        for trigger in triggers:
            await conn.execute(f'drop trigger "{trigger["tgname"]}" on "{trigger["tbl"]}"')
        for table, constraint in _UNROUTABLE_UNIQUES:
            if table in tables:
                await conn.execute(
                    f'alter table "{table}" drop constraint if exists "{constraint}"'
                )
        done: list[str] = []
        for table in tables:
            if table in _REFERENCE_TABLES:
                await conn.execute("select create_reference_table($1)", table)
                done.append(f"{table} (reference)")
        colocate = "none" if "workspaces" in tables else "workspaces"
        for table in ["workspaces", *[t for t in tables if t != "workspaces"]]:
            if table not in tables or table in _REFERENCE_TABLES:
                continue
            column = "id" if table == "workspaces" else "workspace_id"
            await conn.execute(
                "select create_distributed_table($1, $2, colocate_with => $3)",
                table,
                column,
                colocate,
            )
            colocate = "workspaces"
            done.append(f"{table} (distributed by {column})")
        for key in keys:
            await conn.execute(
                f'alter table "{key["tbl"]}" add constraint "{key["conname"]}" {key["def"]}'
            )
        for trigger in triggers:
            await conn.execute(trigger["def"])
        # Citus hides shards from catalog queries by adding a function call per pg_class row,
        # which makes asyncpg's type introspection (once per connection, at the first array
        # or composite type: nearly every statement of Recall) take about a second. Recall
        # reads the catalog only by name, and the coordinator holds only the reference
        # tables' shards (excluded above by relation_is_a_known_shard), so they may show.
        database = await conn.fetchval("select quote_ident(current_database())")
        await conn.execute(f"alter database {database} set citus.override_table_visibility = off")
    return done


# A migration split into its statements, each sent on its own --------------------------------
#
# Why: Citus propagates some DDL on a distributed table (`alter table … add constraint`,
# `create index`) by sending the command's original query string to the shards; when that
# string holds several commands (a whole migration file sent at once) it fails with "cannot
# insert multiple commands into a prepared statement". A database migrated before its tables
# were distributed never sees this; one distributed already (every upgrade of a running
# cluster) does. Each statement alone is one command, in the same transaction as before.
#
# The split follows PostgreSQL's lexical rules for what can hide a semicolon: `--` and `/* */`
# comments (nested, as PostgreSQL nests them), single-quoted strings (`''` inside), quoted
# identifiers and dollar-quoted bodies (`$$ … $$`, `$tag$ … $tag$`). Nothing is rewritten: the
# statements, joined, are the file.

_DOLLAR_TAG = re.compile(r"\$([A-Za-z_][A-Za-z_0-9]*)?\$")


def split_statements(sql: str) -> list[str]:
    """The statements of `sql`, each with its terminating `;` and whatever precedes it
    (comments, blank lines); a trailing part with no statement in it (only comments or spaces)
    is left out. `"".join(...)` of the result plus that part is `sql`."""
    pieces: list[str] = []
    start = i = 0
    n = len(sql)
    while i < n:
        c = sql[i]
        if c == "-" and sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end == -1 else end + 1
        elif c == "/" and sql.startswith("/*", i):
            i = _block_comment_end(sql, i)
        elif c == "'" or c == '"':
            i = _quoted_end(sql, i, c)
        elif c == "$" and (m := _DOLLAR_TAG.match(sql, i)) and not _in_identifier(sql, i):
            close = sql.find(m.group(0), m.end())
            i = n if close == -1 else close + len(m.group(0))
        elif c == ";":
            i += 1
            pieces.append(sql[start:i])
            start = i
        else:
            i += 1
    rest = sql[start:]
    if _has_code(rest):
        pieces.append(rest)
    return pieces


def _block_comment_end(sql: str, i: int) -> int:
    depth = 0
    while i < len(sql):
        if sql.startswith("/*", i):
            depth += 1
            i += 2
        elif sql.startswith("*/", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i
        else:
            i += 1
    return len(sql)


def _quoted_end(sql: str, i: int, quote: str) -> int:
    i += 1
    while i < len(sql):
        if sql[i] == quote:
            if sql.startswith(quote * 2, i):  # '' or "" inside: an escaped quote
                i += 2
                continue
            return i + 1
        i += 1
    return len(sql)


def _in_identifier(sql: str, i: int) -> bool:
    """`$` inside a name (`a$b`) or a parameter (`$1`) does not start a dollar quote."""
    return i > 0 and (sql[i - 1].isalnum() or sql[i - 1] == "_")


def _has_code(text: str) -> bool:
    without_comments = re.sub(r"--[^\n]*|/\*.*?\*/", "", text, flags=re.S)
    return bool(without_comments.strip())
