"""Work the database rolled back for a reason that passes is run again inside the request
(app/data/retry.py): a deadlock or serialization failure (class 40) and a shard Citus moved or
split under a waiting statement. The client sees its answer, not a 503, and nothing is written
twice; past a few attempts, and for anything else, the request answers 503 as before.

A trigger raises the error the first N times a row is inserted, counted by a sequence (a
sequence's nextval survives the rollback the error causes), as PostgreSQL or Citus would.
"""

from __future__ import annotations

import time
from typing import Any

import asyncpg
import pytest

from app.data.retry import PAUSES, in_transaction
from app.observability.metrics import REGISTRY
from tests.changes_support import APPLY, post
from tests.client import GraphQLClient
from tests.conftest import on_citus
from tests.history_support import REPLY, start_turn
from tests.history_support import SEARCH as HISTORY_SEARCH
from tests.message_search_support import SEARCH as MESSAGE_SEARCH
from tests.personas import load_personas

pytestmark = pytest.mark.skipif(
    on_citus(), reason="a trigger raising on a shard; the error is Citus's own"
)

TRANSIENT = pytest.mark.parametrize(
    ("message", "errcode", "reason"),
    [
        ("deadlock detected", "40P01", "conflict"),
        ("could not serialize access due to concurrent update", "40001", "conflict"),
        ("could not find valid entry for shard 102074", "XX000", "shard_moved"),
    ],
    ids=["deadlock", "serialization", "shard-moved"],
)
ATTEMPTS = len(PAUSES) + 1


async def fail_first(
    db: asyncpg.Connection, table: str, times: int, message: str, errcode: str
) -> None:
    """Insert statements into `table` raise `message` the first `times` times."""
    await db.execute(
        f"""
        create sequence test_attempts;
        create function test_transient() returns trigger language plpgsql as $$
        begin
            if nextval('test_attempts') <= {times} then
                raise exception '{message}' using errcode = '{errcode}';
            end if;
            return null;
        end $$;
        create trigger test_transient before insert on {table}
            for each statement execute function test_transient();
        """
    )


async def attempts(db: asyncpg.Connection) -> int:
    """How many times the trigger ran."""
    count: int = await db.fetchval("select last_value from test_attempts")
    return count


def retries(reason: str) -> float:
    return REGISTRY.get_sample_value("recall_database_retries_total", {"reason": reason}) or 0.0


@TRANSIENT
async def test_a_batch_rolled_back_by_a_passing_failure_is_applied_once_when_run_again(
    client: GraphQLClient, db: asyncpg.Connection, message: str, errcode: str, reason: str
) -> None:
    """applyChanges' transaction is the unit: run again, whole, and applied exactly once."""
    from app.data.tokens import issue_connector_token

    await load_personas(db)
    token = await issue_connector_token(db, "acme")
    await fail_first(db, "messages", 2, message, errcode)
    before = retries(reason)

    answer = await client.post(APPLY, {"changes": [post("r1", "general", "bob", "x")]}, token=token)

    assert answer.status == 200 and not answer.errors, answer.body
    assert await attempts(db) == 3
    assert await db.fetchval("select count(*) from messages where key = 'r1'") == 1
    assert retries(reason) - before == 2


async def test_a_search_statement_rolled_back_by_a_deadlock_is_sent_again(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    """Outside a transaction the unit is the statement: messageSearch's audit row is written
    once, on the second try, and the client has its page."""
    await load_personas(db)
    token = await issue_token("member", "acme", "alice")
    await fail_first(db, "search_audit", 1, "deadlock detected", "40P01")

    answer = await client.post(MESSAGE_SEARCH, {"q": "acme"}, token=token)

    assert answer.status == 200 and not answer.errors, answer.body
    assert answer.data["messageSearch"]["edges"]
    assert await attempts(db) == 2
    assert await db.fetchval("select count(*) from search_audit") == 1


async def test_historysearch_records_what_it_showed_once_after_a_passing_failure(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    """historySearch's ledger write (one statement: recall_record_shown) is run again; the
    evidence of what the agent saw is recorded once."""
    turn = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    await fail_first(db, "turn_evidence", 1, "deadlock detected", "40P01")

    answer = await client.post(HISTORY_SEARCH, {"q": "acme"}, token=turn)

    assert answer.status == 200 and not answer.errors, answer.body
    shown = answer.data["historySearch"]["messageIds"]
    assert shown
    assert await attempts(db) == 2
    evidence = await db.fetchval("select count(*) from turn_evidence")
    assert evidence == len(shown)


async def test_a_failure_that_does_not_pass_answers_503_after_a_bounded_number_of_tries(
    client: GraphQLClient, db: asyncpg.Connection
) -> None:
    from app.data.tokens import issue_connector_token

    await load_personas(db)
    token = await issue_connector_token(db, "acme")
    await fail_first(db, "messages", 1000, "deadlock detected", "40P01")

    started = time.monotonic()
    answer = await client.post(APPLY, {"changes": [post("r1", "general", "bob", "x")]}, token=token)

    assert answer.status == 503 and answer.codes == ["SERVICE_UNAVAILABLE"], answer.body
    assert await attempts(db) == ATTEMPTS
    assert time.monotonic() - started < 1.5 * sum(PAUSES) + 2.0
    assert await db.fetchval("select count(*) from messages where key = 'r1'") == 0


@pytest.mark.parametrize(
    ("message", "errcode"),
    [
        ("failure on connection marked as essential: 127.0.0.1:9801", "XX000"),
        ("terminating connection due to administrator command", "XX000"),
        ("statement completion unknown", "40003"),
        ("transaction integrity constraint violation", "40002"),
    ],
    ids=["worker-lost", "worker-stopping", "completion-unknown", "integrity"],
)
async def test_a_failure_that_may_have_been_applied_or_does_not_pass_is_not_tried_again(
    client: GraphQLClient, db: asyncpg.Connection, message: str, errcode: str
) -> None:
    """A lost worker's tenants answer 503 at once (docs/scale.md): a worker does not come back
    in the seconds a retry would wait. A statement whose completion is unknown may have been
    applied; an integrity violation at commit fails the same way every time."""
    from app.data.tokens import issue_connector_token

    await load_personas(db)
    token = await issue_connector_token(db, "acme")
    await fail_first(db, "messages", 1000, message, errcode)

    answer = await client.post(APPLY, {"changes": [post("r1", "general", "bob", "x")]}, token=token)

    assert answer.status == 503 and answer.codes == ["SERVICE_UNAVAILABLE"], answer.body
    assert await attempts(db) == 1


async def test_a_transaction_that_fails_at_its_commit_is_run_again_whole(
    client: GraphQLClient, db: asyncpg.Connection
) -> None:
    """A serialization failure can come at COMMIT (a deferred check here): the whole batch is
    run again, and applied once."""
    from app.data.tokens import issue_connector_token

    await load_personas(db)
    token = await issue_connector_token(db, "acme")
    await db.execute(
        """
        create sequence test_attempts;
        create function test_transient() returns trigger language plpgsql as $$
        begin
            if nextval('test_attempts') <= 1 then
                raise exception 'could not serialize access' using errcode = '40001';
            end if;
            return null;
        end $$;
        create constraint trigger test_transient after insert on messages
            deferrable initially deferred for each row execute function test_transient();
        """
    )

    answer = await client.post(APPLY, {"changes": [post("r1", "general", "bob", "x")]}, token=token)

    assert answer.status == 200 and not answer.errors, answer.body
    assert await attempts(db) == 2
    assert await db.fetchval("select count(*) from messages where key = 'r1'") == 1


async def test_a_reply_rolled_back_by_a_deadlock_is_posted_once(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    """postReply's transaction (the turn's row lock, the reply, its live event) run again."""
    turn = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    await client.gql(HISTORY_SEARCH, {"q": "acme"}, token=turn)
    replies_before = await db.fetchval("select count(*) from messages")
    await fail_first(db, "messages", 1, "deadlock detected", "40P01")

    answer = await client.post(REPLY, {"body": "The launch is Friday"}, token=turn)

    assert answer.status == 200 and not answer.errors, answer.body
    assert answer.data["postReply"]["delivered"] is True
    assert await attempts(db) == 2
    assert await db.fetchval("select count(*) from messages") == replies_before + 1


async def test_a_statement_planned_once_is_sent_again_and_inside_a_transaction_left_to_it(
    dsn: str, db: asyncpg.Connection
) -> None:
    """Session.fetch_planned_once (historySearch's page) on its own is run again; inside a
    transaction it is tried once and the transaction is the unit run again, never both (the
    pauses would multiply)."""
    from app.data.session import Session
    from app.db import create_pool

    await db.execute(
        """
        create sequence test_attempts;
        create function test_fails_first(times int) returns int language plpgsql as $$
        begin
            if nextval('test_attempts') <= times then
                raise exception 'deadlock detected' using errcode = '40P01';
            end if;
            return 1;
        end $$;
        """
    )
    pool = await create_pool(dsn, min_size=1, max_size=2)
    session = Session(pool, planned_once=pool)
    try:
        rows = await session.fetch_planned_once("select test_fails_first(2) as one")
        assert rows[0]["one"] == 1
        assert await attempts(db) == 3

        await db.execute("alter sequence test_attempts restart")
        runs = 0

        async def body() -> int:
            nonlocal runs
            runs += 1
            got = await session.fetch_planned_once("select test_fails_first(1) as one")
            return int(got[0]["one"])

        assert await in_transaction(session, body) == 1
        assert runs == 2  # the first run's statement was not retried on its own
        assert await attempts(db) == 2
    finally:
        await session.close()
        await pool.close()


async def test_a_cli_transaction_on_a_bare_connection_is_run_again_too(
    db: asyncpg.Connection,
) -> None:
    """`recall apply` and `recall turn` run on an asyncpg connection, whose errors arrive raw."""
    await db.execute("create table test_rows (n int)")
    await fail_first(db, "test_rows", 1, "deadlock detected", "40P01")
    runs = 0

    async def body() -> int:
        nonlocal runs
        runs += 1
        return int(await db.fetchval("insert into test_rows values (1) returning n"))

    assert await in_transaction(db, body) == 1
    assert runs == 2
    assert await db.fetchval("select count(*) from test_rows") == 1
