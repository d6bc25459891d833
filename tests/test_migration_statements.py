"""app.migrate.split_statements: a migration file split into its statements (each sent alone, so
that Citus accepts DDL on distributed tables during an upgrade; test_migrate runs that upgrade)."""

from __future__ import annotations

from app.migrate import load_migrations, split_statements


def test_every_migration_splits_into_whole_statements_that_rejoin_to_the_file() -> None:
    for migration in load_migrations():
        pieces = split_statements(migration.sql)
        assert pieces, migration.name
        joined = "".join(pieces)
        assert migration.sql.startswith(joined), migration.name
        assert all(p.rstrip().endswith(";") for p in pieces), migration.name
        # Whatever follows the last statement is only comments and spaces.
        assert not split_statements(migration.sql[len(joined) :]), migration.name


def test_semicolons_inside_comments_strings_names_and_bodies_do_not_split() -> None:
    sql = (
        "-- a comment; still a comment\n"
        "create function f() returns text language sql as $$ select 'a;b' $$;\n"
        "create function g() returns int language plpgsql as $t$ begin return 1; end $t$;\n"
        "select 'it''s; fine', \"odd;name\" from x /* a; /* nested; */ comment */;\n"
        "select $1::text;\n"
        "-- trailing comment; nothing after\n"
    )
    pieces = split_statements(sql)
    assert [p.strip().splitlines()[-1] for p in pieces] == [
        "create function f() returns text language sql as $$ select 'a;b' $$;",
        "create function g() returns int language plpgsql as $t$ begin return 1; end $t$;",
        "select 'it''s; fine', \"odd;name\" from x /* a; /* nested; */ comment */;",
        "select $1::text;",
    ]
    assert "".join(pieces) + "\n-- trailing comment; nothing after\n" == sql


def test_a_last_statement_without_a_semicolon_is_kept() -> None:
    assert split_statements("select 1; select 2") == ["select 1;", " select 2"]
