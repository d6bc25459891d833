"""A deactivated person reads nothing, through an agent's turn neither (issue 22, 7): no new
turn for them, their turns' tokens stop working, and a reply drafted while they were being
deactivated is withheld at the pre-delivery recheck."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

from app.db import connect
from tests.changes_support import Connector, keyed
from tests.client import GraphQLClient
from tests.history_support import REPLY, SEARCH, START, gid, start_turn
from tests.test_cli import recall


async def _deactivate(client: GraphQLClient, db: asyncpg.Connection, key: str) -> None:
    from app.data.tokens import issue_connector_token

    connector = Connector(client, await issue_connector_token(db, "acme"))
    assert (await connector.apply(keyed("deactivateMember", key)))["applied"] == 1


async def test_no_turn_starts_for_a_deactivated_requester(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None,
    dsn: str,
) -> None:  # fmt: skip
    agent = await issue_token("agent", "acme", "helper")
    await _deactivate(client, db, "alice")
    turns_before = await db.fetchval("select count(*) from turns")
    variables = {
        "scope": await gid(db, "Scope", "dm-alice"),
        "requester": await gid(db, "Member", "alice"),
    }
    refused = await client.post(START, variables, token=agent)
    assert refused.codes == ["FORBIDDEN"], refused.body
    assert "deactivated" in refused.errors[0]["message"]
    done = recall("turn", "acme", "helper", "dm-alice", "alice", dsn=dsn)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "deactivated" in done.stderr
    assert await db.fetchval("select count(*) from turns") == turns_before


async def test_a_turn_of_a_requester_deactivated_since_stops_working(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    turn = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    found = await client.post(SEARCH, {"q": "acme"}, token=turn)
    assert not found.errors and found.data["historySearch"]["count"] > 0
    await _deactivate(client, db, "alice")
    for query, variables in ((SEARCH, {"q": "acme"}), (REPLY, {"body": "The launch is Friday"})):
        refused = await client.post(query, variables, token=turn)
        assert refused.status == 401 and refused.codes == ["UNAUTHENTICATED"], refused.body
    # A turn of another person goes on.
    other = await start_turn(client, db, issue_token, scope="dm-carol", requester="carol")
    assert not (await client.post(SEARCH, {"q": "acme"}, token=other)).errors


async def test_a_reply_drafted_while_its_requester_is_deactivated_is_withheld(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None,
    dsn: str,
) -> None:  # fmt: skip
    turn = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    await client.gql(SEARCH, {"q": "acme"}, token=turn)
    # The deactivation is in flight (not committed) when the reply's request reads its token.
    connector = await connect(dsn)
    tx = connector.transaction()
    await tx.start()
    try:
        await connector.execute(
            "update actors set deactivated_at = now() where key = 'alice'"
            " and workspace_id = (select id from workspaces where key = 'acme')"
        )
        reply = asyncio.create_task(
            client.post(REPLY, {"body": "The launch is on Friday"}, token=turn)
        )
        await asyncio.sleep(0.5)
        assert not reply.done(), "the recheck waits for the requester's row"
        await tx.commit()
    except BaseException:
        await tx.rollback()
        raise
    finally:
        await connector.close()
    result = await asyncio.wait_for(reply, 10)
    assert not result.errors, result.body
    outcome = result.data["postReply"]
    assert outcome["delivered"] is False and outcome["message"] is None
    assert "deactivated" in outcome["withheldReason"]
    assert await db.fetchval("select count(*) from messages where key like 'reply-%'") == 0
