"""What makes a whole-workspace bulk load cheap, inside the importer's one transaction.

A COPY of a million messages spent ~70% of its time in the per-row foreign-key triggers (an
executor started per check, four checks per message) and the search documents' insert most of
the rest merging a 256 kB GIN pending list over and over. Both are per-row work the importer can
do set-based, and both fall back to the ordinary path when the database does not allow it:

- `defer_row_checks` turns the per-row triggers off for the transaction
  (`session_replication_role = replica`, which PostgreSQL lets a superuser or a role granted
  `SET` on that parameter do) and `check_foreign_keys` then checks every foreign key of the
  written tables once, as one anti-join each, before commit. The result is the same guarantee:
  the rows referenced all belong to the new workspace, created in this transaction and visible
  to no one else, so no concurrent delete could have needed the checks' row locks.
- `roomy_pending_list` lets the GIN index gather the whole load before merging it, and merges
  it (and restores the index's setting) before commit, so no search ever scans a long list.

- `indexes_after_load` drops the secondary indexes of tables no workspace has rows in yet (a
  fresh database's first import) and builds them again once the load is in: at 1M messages,
  inserting the documents into five indexes larger than shared_buffers, row by row, took
  22.4 s; into the table alone 11.9 s, then 6.1 s to sort every index of both tables once.

On Citus the first two are used too (the session setting reaches the shards with
`citus.propagate_set_commands = 'local'`, and each key's check is a router query within the
workspace's shard group); the indexes are kept there (their DDL would have to reach every
shard).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager

import asyncpg

# Room for a whole import's entries (the GIN maximum is 2 GB; 64 MB is ~10^6 entries).
_ROOMY_KB = 65_536
# What each index build after a load may sort in memory (this transaction only): a GIN build
# over a million documents makes one pass instead of several.
_BUILD_MEMORY = "512MB"
# What each foreign-key check's hash may hold in memory (check_foreign_keys).
_CHECK_MEMORY = "64MB"


async def defer_row_checks(conn: asyncpg.Connection) -> bool:
    """Turn the per-row triggers off for this transaction when allowed; True if it was.

    The privilege is asked first rather than the setting tried in a savepoint: on Citus
    (citus.propagate_set_commands = 'local') a SET LOCAL refused there would still be replayed
    on the shards' connections, and one made in a savepoint is not propagated at all."""
    allowed: bool = await conn.fetchval(
        "select has_parameter_privilege('session_replication_role', 'SET')"
    )
    if not allowed:
        return False
    await conn.execute("set local session_replication_role = replica")
    return True


async def restore_row_checks(conn: asyncpg.Connection) -> None:
    await conn.execute("set local session_replication_role = origin")


async def check_foreign_keys(
    conn: asyncpg.Connection, workspace_id: int, tables: Sequence[str]
) -> str | None:
    """Every foreign key of `tables`, checked for the workspace's rows: the first broken one.

    Read from the catalog, so a key a later migration adds is checked too. MATCH SIMPLE, as
    the constraints are: a row with a NULL in the key is not checked. The tables should have
    fresh statistics (ANALYZE): without them the planner takes the new rows for a handful and
    probes an index per row instead of one hash anti-join each.
    """
    # Each check hashes the referenced table's rows of the workspace: a million messages take
    # ~55 MB, which the default 4 MB makes eight batches through temporary files (the
    # documents' check at 1M: 886 -> 642 ms). This transaction only.
    await conn.execute(f"set local work_mem = '{_CHECK_MEMORY}'")
    keys = await conn.fetch(
        """
        select c.conname, c.conrelid::regclass::text as child,
               c.confrelid::regclass::text as parent,
               array(select a.attname from unnest(c.conkey) with ordinality k(n, i)
                     join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.n
                     order by k.i)::text[] as columns,
               array(select a.attname from unnest(c.confkey) with ordinality k(n, i)
                     join pg_attribute a on a.attrelid = c.confrelid and a.attnum = k.n
                     order by k.i)::text[] as referenced
        from pg_constraint c
        where c.contype = 'f' and c.conrelid = any($1::regclass[])
        order by 1
        """,
        list(tables),
    )
    for key in keys:
        child, parent = key["child"], key["parent"]
        pairs = list(zip(key["columns"], key["referenced"], strict=True))
        present = " and ".join(f"c.{_q(col)} is not null" for col, _ in pairs)
        matches = " and ".join(f"p.{_q(ref)} = c.{_q(col)}" for col, ref in pairs)
        broken = await conn.fetchval(
            f"""
            select exists (
                select 1 from {child} c
                where c.workspace_id = $1 and {present}
                  and not exists (select 1 from {parent} p where {matches}))
            """,
            workspace_id,
        )
        if broken:
            return str(key["conname"])
    return None


@asynccontextmanager
async def roomy_pending_list(conn: asyncpg.Connection, index: str) -> AsyncIterator[None]:
    """A large GIN pending list for the block, merged and set back before it ends.

    The setting is changed inside the import's transaction, so no other session ever sees it;
    the lock it takes (SHARE UPDATE EXCLUSIVE on the index) lets searches and writes go on and
    makes a second concurrent import wait for this one.
    """
    before = await conn.fetchval(
        """
        select option_value from pg_class c, pg_options_to_table(c.reloptions)
        where c.oid = $1::regclass and option_name = 'gin_pending_list_limit'
        """,
        index,
    )
    try:
        async with conn.transaction():  # a savepoint: only the index's owner may alter it
            await conn.execute(
                f"alter index {_q(index)} set (gin_pending_list_limit = {_ROOMY_KB})"
            )
    except asyncpg.InsufficientPrivilegeError:
        yield
        return
    yield
    if before is None:
        await conn.execute(f"alter index {_q(index)} reset (gin_pending_list_limit)")
    else:
        await conn.execute(f"alter index {_q(index)} set (gin_pending_list_limit = {int(before)})")
    await conn.execute("select gin_clean_pending_list($1::regclass)", index)


def _q(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


class _NotEmpty(Exception):
    pass


async def indexes_after_load(conn: asyncpg.Connection, tables: Sequence[str]) -> dict[str, str]:
    """Drop the secondary indexes of `tables` when none has a row; their definitions by name,
    for `build_indexes` before commit (empty: nothing was dropped).

    Only where it cannot hold anyone up: the emptiness is checked first without a lock, so a
    database with data never sees this import take one; then again under the ACCESS
    EXCLUSIVE lock, which lasts until commit, so a concurrent first import waits rather than
    loading into unindexed tables. Indexes that back a constraint stay (keys are checked as
    rows go in). A role that does not own the tables keeps the ordinary path.
    """
    names = ", ".join(_q(t) for t in tables)
    if not await _all_empty(conn, tables):
        return {}
    try:
        async with conn.transaction():  # a savepoint: its lock goes if it is rolled back
            await conn.execute(f"lock table {names} in access exclusive mode")
            if not await _all_empty(conn, tables):
                raise _NotEmpty
            indexes = await conn.fetch(
                """
                select i.indexrelid::regclass::text as name, pg_get_indexdef(i.indexrelid) as sql
                from pg_index i
                where i.indrelid = any($1::regclass[])
                  and not exists (select 1 from pg_constraint c where c.conindid = i.indexrelid)
                order by 1
                """,
                list(tables),
            )
            for index in indexes:
                await conn.execute(f"drop index {index['name']}")
    except (_NotEmpty, asyncpg.InsufficientPrivilegeError):
        return {}
    return {index["name"]: index["sql"] for index in indexes}


async def build_indexes(conn: asyncpg.Connection, definitions: Mapping[str, str]) -> None:
    """Build the indexes `indexes_after_load` dropped, as they were (names and settings)."""
    if not definitions:
        return
    await conn.execute(f"set local maintenance_work_mem = '{_BUILD_MEMORY}'")
    for sql in definitions.values():
        await conn.execute(sql)


async def _all_empty(conn: asyncpg.Connection, tables: Sequence[str]) -> bool:
    empty: bool = await conn.fetchval(
        "select " + " and ".join(f"not exists (select 1 from {_q(t)})" for t in tables)
    )
    return empty
