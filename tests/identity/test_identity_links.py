"""Linked identities (docs/identity.md), through GraphQL over HTTP (and MCP) on real PostgreSQL:
the link flow and its refusals, the starter's approval (a confirmed link opens nothing before
it), the one path a live link opens on every surface (messageSearch, historySearch, lineage, the
audit's counts, the pre-delivery recheck), speaker REQUESTER, and revocation by either member or
the connector."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from app.data.tokens import issue_connector_token
from app.request.ids import encode_id
from app.settings import Settings
from tests.changes_support import Connector, keyed
from tests.client import GraphQLClient
from tests.history_support import REPLY, hit_keys, shown_keys, start_turn
from tests.history_support import search as history_search
from tests.identity_support import (
    APPROVE_LINK,
    CONFIRM_LINK,
    FOLLOWS,
    LINKS_OF,
    NEVER,
    REVOKE_LINK,
    approve,
    confirm,
    link,
    linked_acme,
    revoke,
    start_code,
)
from tests.mcp_support import mcp_app, ok
from tests.message_search_support import keys
from tests.personas import globex, load
from tests.rows import one


@pytest.fixture
async def linked(db: asyncpg.Connection, issue_token: Any) -> dict[str, str]:
    """The two-namespace workspace (tests.identity_support) and globex; member tokens."""
    await load(db, linked_acme())
    await load(db, globex())
    tokens = {
        m: await issue_token("member", "acme", m)
        for m in ("alice", "alice-web", "alice-mail", "alicia", "bob", "web-carol")
    }
    tokens["mallory"] = await issue_token("member", "globex", "mallory")
    return tokens


async def _links(db: asyncpg.Connection) -> list[tuple[Any, ...]]:
    rows = await db.fetch(
        "select member_a, member_b, revoked_at, revoked_via from identity_links order by id"
    )
    return [tuple(r) for r in rows]


async def _refused(client: GraphQLClient, token: str, code: str) -> str:
    result = await client.post(CONFIRM_LINK, {"code": code}, token=token)
    assert result.codes == ["BAD_USER_INPUT"], result.body
    message: str = result.errors[0]["message"]
    assert "select" not in message.lower() and "Traceback" not in message
    return message


# What alice-web reads without any link: her DM, her group DM and web's public channel.
WEB_OWN = {"wb1", "wg1", "wp1"}


def _zebra(found: list[str] | set[str]) -> set[str]:
    return set(found) & (FOLLOWS | NEVER | WEB_OWN)


# --- namespaces ------------------------------------------------------------------------------


async def test_members_and_audiences_are_in_their_namespaces(
    client: GraphQLClient, db: asyncpg.Connection, linked: dict[str, str]
) -> None:
    data = await client.gql(LINKS_OF, token=linked["alice-web"])
    assert data["viewer"]["member"]["namespace"] == "web:acme"
    spaces = {m["key"]: m["namespace"] for m in data["viewerWorkspace"]["workspace"]["members"]}
    assert spaces["alice"] == "slack:acme" and spaces["alice-mail"] == "mail:acme"
    # The web DM's audience is members(web:acme, [alice-web]); the thread has its parent's.
    rows = await db.fetch(
        "select s.key, n.name, a.kind from scopes s join audiences a on a.workspace_id ="
        " s.workspace_id and a.id = s.origin_audience_id join namespaces n on n.workspace_id ="
        " a.workspace_id and n.id = a.namespace_id where s.key in ('web-dm', 't-dm', 'web-public')"
    )
    assert {(r["key"], r["name"], r["kind"]) for r in rows} == {
        ("web-dm", "web:acme", "members"),
        ("t-dm", "slack:acme", "members"),
        ("web-public", "web:acme", "workspace"),
    }


async def test_without_a_link_nothing_crosses_namespaces(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, linked: dict[str, str]
) -> None:
    assert _zebra(await keys(client, linked["alice-web"], "zebra")) == WEB_OWN
    assert _zebra(await keys(client, linked["alice"], "zebra")) == FOLLOWS | {
        "da3", "da5", "pa1", "gr1", "ge1",
    }  # fmt: skip
    turn = await start_turn(client, db, issue_token, scope="web-dm", requester="alice-web")
    found = await history_search(client, turn, "zebra", first=20)
    assert shown_keys(found) <= WEB_OWN


async def test_a_human_member_of_another_namespace_is_refused(
    client: GraphQLClient, db: asyncpg.Connection, linked: dict[str, str]
) -> None:
    connector = Connector(client, await issue_connector_token(db, "acme"))
    before = await db.fetchval("select count(*) from scopes")
    for change in (
        {"createScope": {"key": "mixed", "kind": "dm", "members": ["alice", "alice-web"]}},
        {"createScope": {"key": "mixed", "kind": "dm", "members": ["alice-web", "helper"]}},
        {"addScopeMembers": {"scope": "web-dm", "members": ["alice"]}},
        {"createMemory": {"key": "m-x", "audience": {"kind": "members", "readers": ["alice-web"]}}},
        {"upsertMember": {"key": "alice", "namespace": "web:acme"}},
    ):
        result = await connector.attempt(change)
        assert result.codes == ["BAD_USER_INPUT"], (change, result.body)
    assert await db.fetchval("select count(*) from scopes") == before
    # In its own namespace it is fine, and an agent may join a scope of any namespace.
    done = await connector.apply(
        {"upsertMember": {"key": "dora", "namespace": "web:acme"}},
        {"createScope": {"key": "web-dm2", "kind": "dm", "members": ["dora", "helper"],
                         "namespace": "web:acme"}},
        {"createMemory": {"key": "m-web", "audience": {"kind": "members", "readers": ["dora"],
                                                       "namespace": "web:acme"}}},
    )  # fmt: skip
    assert done["applied"] == 3


# --- the flow and its refusals ---------------------------------------------------------------


async def test_link_flow_joins_two_identities_once(
    client: GraphQLClient, db: asyncpg.Connection, linked: dict[str, str]
) -> None:
    started = await client.gql("mutation { startIdentityLink { code expiresAt } }",
                               token=linked["alice"])  # fmt: skip
    code = started["startIdentityLink"]["code"]
    assert len(code.replace("-", "")) == 10
    stored = one(
        await db.fetchrow(
            "select code_hash, expires_at - created_at as ttl from identity_link_codes"
        )
    )
    assert code.encode() not in stored["code_hash"] and stored["ttl"].total_seconds() == 600
    made = await confirm(client, linked["alice-web"], code.lower())  # case does not matter
    assert [m["key"] for m in made["members"]] == ["alice", "alice-web"]
    assert made["revokedAt"] is None and made["verifiedAt"]
    # Single use.
    await _refused(client, linked["alice-mail"], code)
    # Both identities list it; nobody else sees it.
    mine = await client.gql(LINKS_OF, token=linked["alice"])
    assert [link["id"] for link in mine["viewer"]["member"]["identityLinks"]] == [made["id"]]
    listed = {
        m["key"]: [x["id"] for x in m["identityLinks"]]
        for m in mine["viewerWorkspace"]["workspace"]["members"]
    }
    assert listed["alice"] == [made["id"]] and listed["alice-web"] == [made["id"]]
    assert listed["bob"] == [] and listed["alice-mail"] == []
    theirs = await client.gql(LINKS_OF, token=linked["bob"])
    assert all(not m["identityLinks"] for m in theirs["viewerWorkspace"]["workspace"]["members"])
    node = await client.post("query($id: ID!) { node(id: $id) { id } }", {"id": made["id"]},
                             token=linked["bob"])  # fmt: skip
    assert node.data == {"node": None}


async def test_every_refusal_changes_nothing_and_leaves_the_code_usable(
    client: GraphQLClient, db: asyncpg.Connection, linked: dict[str, str]
) -> None:
    code = await start_code(client, linked["alice"])
    await _refused(client, linked["alice"], code)  # the starter
    await _refused(client, linked["bob"], code)  # the same namespace
    await _refused(client, linked["alicia"], code)  # the same namespace, the same name
    await _refused(client, linked["mallory"], code)  # another workspace
    await _refused(client, linked["alice-web"], "ZZZZZ-ZZZZZ")  # unknown
    await _refused(client, linked["alice-web"], "not a code at all; drop table")
    assert await _links(db) == []
    assert await db.fetchval("select count(*) from identity_link_codes where used_at is null") == 1
    made = await confirm(client, linked["alice-web"], code)  # still usable
    # Either member already has a live link into the other's namespace.
    again = await start_code(client, linked["alice"])
    await _refused(client, linked["web-carol"], again)
    from_web = await start_code(client, linked["alice-web"])
    await _refused(client, linked["bob"], from_web)
    assert len(await _links(db)) == 1
    # Once revoked, a new link into that namespace may be made, with the code still usable.
    await revoke(client, linked["alice"], made["id"])
    await confirm(client, linked["web-carol"], again)
    assert len(await _links(db)) == 2


async def test_expired_and_cancelled_codes_are_refused(
    client: GraphQLClient, db: asyncpg.Connection, linked: dict[str, str]
) -> None:
    first = await start_code(client, linked["alice"])
    second = await start_code(client, linked["alice"])  # cancels the first
    await _refused(client, linked["alice-web"], first)
    await db.execute("update identity_link_codes set expires_at = now() - interval '1 second'"
                     " where cancelled_at is null")  # fmt: skip
    await _refused(client, linked["alice-web"], second)
    assert await _links(db) == []


async def test_link_code_ttl_is_configurable(
    client: GraphQLClient, db: asyncpg.Connection, linked: dict[str, str], dsn: str
) -> None:
    from app.settings import Settings
    from tests.client import graphql_client

    async with graphql_client(Settings(RECALL_LINK_CODE_TTL=5), dsn) as short:
        await start_code(short, linked["alice"])
    ttl = await db.fetchval("select expires_at - created_at from identity_link_codes")
    assert ttl.total_seconds() == 5


async def test_revoking_a_link_that_is_not_yours_answers_like_a_missing_one(
    client: GraphQLClient, db: asyncpg.Connection, linked: dict[str, str]
) -> None:
    made = await link(client, linked["alice"], linked["alice-web"])
    theirs = await client.post(REVOKE_LINK, {"id": made["id"]}, token=linked["bob"])
    missing = await client.post(
        REVOKE_LINK, {"id": encode_id("IdentityLink", 10**12)}, token=linked["bob"]
    )
    assert theirs.codes == missing.codes == ["BAD_USER_INPUT"]
    assert theirs.errors[0]["message"] == missing.errors[0]["message"]
    assert (await _links(db))[0][2] is None
    revoked = await revoke(client, linked["alice-web"], made["id"])
    assert revoked["revokedAt"] is not None
    # Again: the link as it is; the history stays (never deleted).
    assert (await revoke(client, linked["alice"], made["id"]))["revokedAt"] == revoked["revokedAt"]
    row = one(await db.fetchrow("select revoked_by, revoked_via from identity_links"))
    web = await db.fetchval("select id from actors where key = 'alice-web'")
    assert (row["revoked_by"], row["revoked_via"]) == (web, "member")


async def test_only_member_tokens_link(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, linked: dict[str, str]
) -> None:
    agent = await issue_token("agent", "acme", "helper")
    result = await client.post("mutation { startIdentityLink { code } }", token=agent)
    assert result.codes == ["FORBIDDEN"]


# --- the one path ----------------------------------------------------------------------------


async def test_single_reader_evidence_follows_into_the_other_identitys_searches(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, linked: dict[str, str]
) -> None:
    await link(client, linked["alice"], linked["alice-web"])
    # B's own messageSearch: A's DM, its thread, the one-member private channel, the replies
    # built on them and a memory for A alone; never two-reader audiences, the other
    # namespace's public channel, a namesake's DM or a group on B's side.
    assert _zebra(await keys(client, linked["alice-web"], "zebra")) == FOLLOWS | WEB_OWN
    # An agent's turn in B's DM.
    turn = await start_turn(client, db, issue_token, scope="web-dm", requester="alice-web")
    found = await history_search(client, turn, "zebra", first=20)
    assert _zebra(shown_keys(found)) == FOLLOWS | WEB_OWN
    # Symmetric: B's single-reader DM follows into A's searches; web's public channel does not.
    assert _zebra(await keys(client, linked["alice"], "zebra")) == FOLLOWS | {
        "da3", "da5", "pa1", "gr1", "ge1", "wb1",
    }  # fmt: skip


async def test_multi_reader_destinations_and_third_parties_never_use_a_link(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, linked: dict[str, str]
) -> None:
    await link(client, linked["alice"], linked["alice-web"])
    # A group on B's side: two readers, no link.
    group = await start_turn(client, db, issue_token, scope="web-group", requester="alice-web")
    assert _zebra(shown_keys(await history_search(client, group, "zebra", first=20))) <= {
        "wg1", "wp1",
    }  # fmt: skip
    # Everyone else: as before the link.
    assert _zebra(await keys(client, linked["web-carol"], "zebra")) == {"wg1", "wp1"}
    assert _zebra(await keys(client, linked["alicia"], "zebra")) == {"dal1", "ge1"}
    assert _zebra(await keys(client, linked["bob"], "zebra")) == {"pa1", "gr1", "ge1"}
    assert await keys(client, linked["mallory"], "zebra") == []
    # A turn of alicia (the other "Alice") in her DM.
    other = await start_turn(client, db, issue_token, scope="dm-alicia", requester="alicia")
    assert not (_zebra(shown_keys(await history_search(client, other, "zebra", first=20)))
                & (FOLLOWS | {"wb1"}))  # fmt: skip


async def test_links_never_chain(
    client: GraphQLClient, db: asyncpg.Connection, linked: dict[str, str]
) -> None:
    await link(client, linked["alice"], linked["alice-web"])
    await link(client, linked["alice"], linked["alice-mail"])
    # mail reaches slack's single-reader evidence (its own link), never web's through slack.
    seen = set(await keys(client, linked["alice-mail"], "zebra"))
    assert seen >= FOLLOWS and "ml1" in seen
    assert "wb1" not in seen
    assert "ml1" not in set(await keys(client, linked["alice-web"], "zebra"))


async def test_a_reply_built_on_the_dm_reaches_the_other_dm_only_while_linked(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, linked: dict[str, str]
) -> None:
    made = await link(client, linked["alice"], linked["alice-web"])
    turn = await start_turn(client, db, issue_token, scope="web-dm", requester="alice-web")
    found = await history_search(client, turn, "private dm note", first=5)
    assert "da1" in hit_keys(found)
    reply = (await client.gql(REPLY, {"body": "zebra answer from your dm"}, token=turn))[
        "postReply"
    ]
    assert reply["delivered"] is True
    posted = reply["message"]["key"]
    assert posted in await keys(client, linked["alice-web"], "zebra")
    await revoke(client, linked["alice"], made["id"])
    # Its lineage needs the link: closed from the next request on, for B and B's agent turns.
    assert posted not in await keys(client, linked["alice-web"], "zebra")
    assert {"da2", "da4"}.isdisjoint(await keys(client, linked["alice-web"], "zebra"))


async def test_revocation_closes_the_path_on_the_next_request_and_withholds_the_reply(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, linked: dict[str, str]
) -> None:
    made = await link(client, linked["alice"], linked["alice-web"])
    turn = await start_turn(client, db, issue_token, scope="web-dm", requester="alice-web")
    found = await history_search(client, turn, "private dm note", first=5)
    assert "da1" in hit_keys(found)
    await revoke(client, linked["alice-web"], made["id"])
    assert _zebra(await keys(client, linked["alice-web"], "zebra")) == WEB_OWN
    again = await history_search(client, turn, "zebra", first=20)
    assert _zebra(shown_keys(again)) <= WEB_OWN
    # The draft's evidence was eligible only through the link: withheld, not written.
    outcome = (await client.gql(REPLY, {"body": "your dm note says"}, token=turn))["postReply"]
    assert outcome["delivered"] is False and outcome["message"] is None
    assert outcome["withheldReason"]
    assert await db.fetchval("select count(*) from messages where body = 'your dm note says'") == 0


async def test_a_turn_started_before_the_link_benefits_on_its_next_search(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, linked: dict[str, str]
) -> None:
    turn = await start_turn(client, db, issue_token, scope="web-dm", requester="alice-web")
    assert "da1" not in shown_keys(await history_search(client, turn, "private dm note"))
    await link(client, linked["alice-web"], linked["alice"])
    assert "da1" in hit_keys(await history_search(client, turn, "private dm note"))


async def test_speaker_requester_includes_linked_identities_written_before_the_link(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, linked: dict[str, str]
) -> None:
    turn = await start_turn(client, db, issue_token, scope="web-dm", requester="alice-web")
    before = await history_search(client, turn, "zebra", speaker="REQUESTER", first=20)
    assert set(hit_keys(before)) == {"wb1", "wp1"}
    made = await link(client, linked["alice"], linked["alice-web"])
    after = await history_search(client, turn, "zebra", speaker="REQUESTER", first=20)
    # alice's own messages (written before the link), never alicia's (also "Alice"), never
    # the agent's, never what alice wrote where B may not read (pair, general).
    assert set(hit_keys(after)) == {"wb1", "wp1", "da1", "td1", "so1"}
    authors = await db.fetch(
        "select distinct a.key from messages m join actors a on a.workspace_id = m.workspace_id"
        " and a.id = m.author_id where m.key in ('da1', 'td1', 'so1')"
    )
    assert [r["key"] for r in authors] == ["alice"]  # author ids are never rewritten
    await revoke(client, linked["alice"], made["id"])
    final = await history_search(client, turn, "zebra", speaker="REQUESTER", first=20)
    assert set(hit_keys(final)) == {"wb1", "wp1"}


async def test_the_audit_counts_link_only_messages_by_the_same_rule(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, linked: dict[str, str]
) -> None:
    async def excluded_by_audience() -> int:
        await keys(client, linked["alice-web"], "zebra")
        row = one(
            await db.fetchrow(
                "select exclusions from search_audit where surface = 'message_search'"
                " order by id desc limit 1"
            )
        )
        exclusions = row["exclusions"]
        return int(exclusions["audience"]) + int(exclusions["lineage"])

    unlinked = await excluded_by_audience()
    made = await link(client, linked["alice"], linked["alice-web"])
    assert await excluded_by_audience() == unlinked - len(FOLLOWS)
    await revoke(client, linked["alice"], made["id"])
    assert await excluded_by_audience() == unlinked


async def test_connector_revokes_links(
    client: GraphQLClient, db: asyncpg.Connection, linked: dict[str, str]
) -> None:
    connector = Connector(client, await issue_connector_token(db, "acme"))
    await link(client, linked["alice"], linked["alice-web"])
    assert await connector.apply(keyed("revokeIdentityLinks", "alice")) == {
        "applied": 1, "unchanged": 0, "erasedMessages": 0,
    }  # fmt: skip
    assert (await connector.apply(keyed("revokeIdentityLinks", "alice")))["unchanged"] == 1
    assert _zebra(await keys(client, linked["alice-web"], "zebra")) == WEB_OWN
    # Deactivating either identity revokes its links too.
    await link(client, linked["alice"], linked["alice-web"])
    assert set(await keys(client, linked["alice-web"], "zebra")) >= FOLLOWS
    await connector.apply(keyed("deactivateMember", "alice"))
    assert _zebra(await keys(client, linked["alice-web"], "zebra")) == WEB_OWN
    assert [r[3] for r in await _links(db)] == ["connector", "deactivation"]
    assert (await connector.attempt(keyed("revokeIdentityLinks", "nobody"))).codes == [
        "BAD_USER_INPUT"
    ]


async def test_another_namespaces_public_channel_is_not_listed_nor_named_by_in(
    client: GraphQLClient, db: asyncpg.Connection, linked: dict[str, str]
) -> None:
    """A public channel is the workspace audience of its own namespace: alice-web cannot read
    slack's #general, so it is not among her scopes and `in:#general` names nothing — exactly
    like a channel that does not exist. Her own namespace's public channel is both."""
    listed = await client.gql(
        "{ viewer { workspace { scopes { key } } } }", token=linked["alice-web"]
    )
    scopes = {s["key"] for s in listed["viewer"]["workspace"]["scopes"]}
    assert "web-public" in scopes and "general" not in scopes
    data = await client.gql(
        "query($q: String!) { messageSearch(query: $q) { edges { node { key } }"
        " interpretation { operators { value known matches { id } } } } }",
        {"q": "zebra in:#general in:#nosuch in:#web-public"},
        token=linked["alice-web"],
    )
    readings = data["messageSearch"]["interpretation"]["operators"]
    assert [(r["value"], r["known"], len(r["matches"])) for r in readings] == [
        ("#general", False, 0),
        ("#nosuch", False, 0),
        ("#web-public", True, 1),
    ]
    assert [e["node"]["key"] for e in data["messageSearch"]["edges"]] == ["wp1"]
    # Slack's own members still list and name it.
    listed = await client.gql("{ viewer { workspace { scopes { key } } } }", token=linked["alice"])
    assert "general" in {s["key"] for s in listed["viewer"]["workspace"]["scopes"]}


PREVIEW = """
query($code: String!) {
  identityLinkCode(code: $code) { expiresAt starter { key name namespace } }
}
"""


async def test_a_code_shows_whom_it_links_to_before_it_is_confirmed(
    client: GraphQLClient, db: asyncpg.Connection, linked: dict[str, str]
) -> None:
    """The person confirming sees who started the code (so a stranger's code is recognised
    as one) without using it; the starter's own token, an unknown code and a used one are
    refused alike."""
    code = await start_code(client, linked["alice"])
    seen = await client.gql(PREVIEW, {"code": code}, token=linked["alice-web"])
    assert seen["identityLinkCode"]["starter"] == {
        "key": "alice",
        "name": "Alice",
        "namespace": "slack:acme",
    }
    assert await db.fetchval("select count(*) from identity_links") == 0
    for token, value in (
        (linked["alice"], code),
        (linked["alice-web"], "ZZZZZ-ZZZZZ"),
        (linked["alice-web"], "x" * 10_000),
    ):
        refused = await client.post(PREVIEW, {"code": value}, token=token)
        assert refused.codes == ["BAD_USER_INPUT"], refused.body
    # Previewing used nothing: the code still confirms, and is then used.
    await confirm(client, linked["alice-web"], code)
    used = await client.post(PREVIEW, {"code": code}, token=linked["web-carol"])
    assert used.codes == ["BAD_USER_INPUT"]


# --- the starter's approval (issue 33, finding 10) --------------------------------------------

LINKS_WITH_STATUS = """
query { viewer { member { identityLinks {
  id status verifiedAt approvedAt approveBefore revokedAt members { key name namespace }
} } } }
"""


async def _own_links(client: GraphQLClient, token: str) -> list[dict[str, Any]]:
    data = await client.gql(LINKS_WITH_STATUS, token=token)
    links: list[dict[str, Any]] = data["viewer"]["member"]["identityLinks"]
    return links


async def test_a_phished_code_confirmed_by_someone_else_opens_nothing_before_approval(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, linked: dict[str, str]
) -> None:
    """web-carol got alice's code ("paste me your code") and confirms it before alice-web
    does: the link is PENDING, and neither her searches nor her agent's turns reach alice's
    single-reader messages. Alice is shown who confirmed it (name, key, namespace) and
    declines; the code is used, so alice-web's attempt is refused and alice starts anew."""
    code = await start_code(client, linked["alice"])
    pending = await confirm(client, linked["web-carol"], code)
    assert pending["status"] == "PENDING"
    assert pending["approvedAt"] is None and pending["approveBefore"] and pending["verifiedAt"]
    # Before approval: carol's own search, her agent's turn in her DM, and alice's side all
    # stay as they were without any link.
    assert _zebra(await keys(client, linked["web-carol"], "zebra")) == {"wg1", "wp1"}
    connector = Connector(client, await issue_connector_token(db, "acme"))
    await connector.apply(
        {"createScope": {"key": "carol-dm", "kind": "dm", "namespace": "web:acme",
                         "members": ["web-carol", "helper"]}}
    )  # fmt: skip
    turn = await start_turn(client, db, issue_token, scope="carol-dm", requester="web-carol")
    found = await history_search(client, turn, "zebra", first=20)
    assert not (set(shown_keys(found)) & FOLLOWS)
    assert set(hit_keys(await history_search(client, turn, "zebra", speaker="REQUESTER"))) <= {
        "wg1", "wp1",
    }  # fmt: skip
    assert "wb1" not in await keys(client, linked["alice"], "zebra")
    # The starter sees who confirmed it, and declines.
    [seen] = await _own_links(client, linked["alice"])
    assert seen["status"] == "PENDING"
    assert seen["members"][1] == {"key": "web-carol", "name": "Carol", "namespace": "web:acme"}
    declined = await revoke(client, linked["alice"], seen["id"])
    assert declined["revokedAt"] is not None
    assert (await _own_links(client, linked["alice"]))[0]["status"] == "REVOKED"
    # Declined, it can never be approved; the code was used by the first confirmer.
    refused = await client.post(APPROVE_LINK, {"id": seen["id"]}, token=linked["alice"])
    assert refused.codes == ["BAD_USER_INPUT"]
    await _refused(client, linked["alice-web"], code)
    assert _zebra(await keys(client, linked["web-carol"], "zebra")) == {"wg1", "wp1"}
    await link(client, linked["alice"], linked["alice-web"])
    assert _zebra(await keys(client, linked["alice-web"], "zebra")) == FOLLOWS | WEB_OWN


async def test_only_the_starter_approves_and_the_link_is_live_from_then_on(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, linked: dict[str, str]
) -> None:
    code = await start_code(client, linked["alice"])
    pending = await confirm(client, linked["alice-web"], code)
    assert _zebra(await keys(client, linked["alice-web"], "zebra")) == WEB_OWN
    turn = await start_turn(client, db, issue_token, scope="web-dm", requester="alice-web")
    assert _zebra(shown_keys(await history_search(client, turn, "zebra", first=20))) <= WEB_OWN
    # The confirmer, a stranger and another workspace cannot approve it: exactly as unknown
    # as a link that does not exist. An agent token may not approve at all.
    missing = await client.post(
        APPROVE_LINK, {"id": encode_id("IdentityLink", 10**12)}, token=linked["alice"]
    )
    for token in (linked["alice-web"], linked["bob"], linked["mallory"]):
        theirs = await client.post(APPROVE_LINK, {"id": pending["id"]}, token=token)
        assert theirs.codes == missing.codes == ["BAD_USER_INPUT"], theirs.body
        assert theirs.errors[0]["message"] == missing.errors[0]["message"]
    agent = await issue_token("agent", "acme", "helper")
    assert (await client.post(APPROVE_LINK, {"id": pending["id"]}, token=agent)).codes == [
        "FORBIDDEN"
    ]
    assert _zebra(await keys(client, linked["alice-web"], "zebra")) == WEB_OWN
    # The starter approves: live from the next request on, for B and B's agent's turn.
    made = await approve(client, linked["alice"], pending["id"])
    assert made["status"] == "LIVE" and made["approvedAt"] and made["approveBefore"] is None
    assert made["verifiedAt"] == pending["verifiedAt"]
    assert _zebra(await keys(client, linked["alice-web"], "zebra")) == FOLLOWS | WEB_OWN
    assert _zebra(shown_keys(await history_search(client, turn, "zebra", first=20))) == (
        FOLLOWS | WEB_OWN
    )
    # Approving again answers it as it is; both identities list it as live.
    assert (await approve(client, linked["alice"], pending["id"]))["approvedAt"] == made[
        "approvedAt"
    ]
    assert [x["status"] for x in await _own_links(client, linked["alice-web"])] == ["LIVE"]


async def test_a_pending_link_expires_unapproved_and_counts_until_then(
    client: GraphQLClient, db: asyncpg.Connection, linked: dict[str, str]
) -> None:
    pending = await confirm(client, linked["alice-web"], await start_code(client, linked["alice"]))
    stored = await db.fetchval("select approve_before - verified_at from identity_links")
    assert stored.total_seconds() == 600  # the code's lifetime, from the confirmation
    # While pending, it counts as a link into that namespace: no second one beside it.
    await _refused(client, linked["web-carol"], await start_code(client, linked["alice"]))
    await db.execute("update identity_links set approve_before = now() - interval '1 second'")
    assert [x["status"] for x in await _own_links(client, linked["alice"])] == ["EXPIRED"]
    refused = await client.post(APPROVE_LINK, {"id": pending["id"]}, token=linked["alice"])
    assert refused.codes == ["BAD_USER_INPUT"] and "expired" in refused.errors[0]["message"]
    assert _zebra(await keys(client, linked["alice-web"], "zebra")) == WEB_OWN
    # Expired, it no longer stands in the way of a new link.
    await link(client, linked["alice"], linked["alice-web"])
    statuses = [x["status"] for x in await _own_links(client, linked["alice"])]
    assert statuses == ["EXPIRED", "LIVE"]


async def test_a_code_for_one_namespace_refuses_confirmers_of_another(
    client: GraphQLClient, db: asyncpg.Connection, linked: dict[str, str]
) -> None:
    start = "mutation($ns: String) { startIdentityLink(namespace: $ns) { code } }"
    for namespace in ("slack:acme", "nosuch:acme", "web:acme' or 1=1"):  # own, unknown
        refused = await client.post(start, {"ns": namespace}, token=linked["alice"])
        assert refused.codes == ["BAD_USER_INPUT"], refused.body
    assert await db.fetchval("select count(*) from identity_link_codes") == 0
    code = (await client.gql(start, {"ns": "web:acme"}, token=linked["alice"]))[
        "startIdentityLink"
    ]["code"]
    message = await _refused(client, linked["alice-mail"], code)
    assert "namespace" in message
    assert await _links(db) == []
    made = await confirm(client, linked["alice-web"], code)  # still usable
    assert [m["namespace"] for m in made["members"]] == ["slack:acme", "web:acme"]


async def test_links_made_before_approval_existed_stay_live(empty_dsn: str, tmp_path: Any) -> None:
    """Migration 032 marks every link it finds approved when it was verified."""
    import io
    import shutil

    from app.db import connect
    from app.migrate import migrate
    from app.workspace_import.importer import import_fixture
    from tests.test_migrate import _SOURCE_TREE_MIGRATIONS

    every = sorted(_SOURCE_TREE_MIGRATIONS.glob("[0-9]*.sql"))
    # Today's importer writes the data; it needs the block summaries too (036, which no
    # migration between depends on).
    before = [p for p in every if p.name < "032" or p.name.startswith("036_")]
    for path in before:
        shutil.copy(path, tmp_path / path.name)
    conn = await connect(empty_dsn)
    try:
        await migrate(conn, tmp_path)
        await import_fixture(conn, linked_acme(), io.StringIO())
        await conn.execute(
            "insert into identity_link_codes (workspace_id, member_id, code_hash, expires_at,"
            " used_at) select workspace_id, id, '\\x01', now(), now() from actors"
            " where key = 'alice'"
        )
        await conn.execute(
            "insert into identity_links (workspace_id, member_a, namespace_a, member_b,"
            " namespace_b, code_id, verified_at) select a.workspace_id, a.id, a.namespace_id,"
            " b.id, b.namespace_id, c.id, now() - interval '1 day' from actors a"
            " join actors b on b.workspace_id = a.workspace_id and b.key = 'alice-web'"
            " join identity_link_codes c on c.workspace_id = a.workspace_id"
            " where a.key = 'alice'"
        )
        assert [p.name for p in every if p not in before] == await migrate(conn)
        row = one(await conn.fetchrow("select verified_at, approved_at from identity_links"))
        assert row["approved_at"] == row["verified_at"]
    finally:
        await conn.close()


async def test_mcp_searches_reach_nothing_through_a_pending_link_and_all_through_an_approved_one(
    client: GraphQLClient,
    db: asyncpg.Connection,
    issue_token: Any,
    linked: dict[str, str],
    settings: Settings,
    dsn: str,
) -> None:
    """MCP tools link nothing, but search through the same predicate: alice-web's
    search_messages and her agent's search_history show none of alice's single-reader
    messages while the link is pending, and show them once alice approved it."""
    da1 = await db.fetchval("select id from messages where key = 'da1'")
    da1_id = encode_id("Message", da1)
    turn = await start_turn(client, db, issue_token, scope="web-dm", requester="alice-web")

    async def reached() -> tuple[bool, bool]:
        async with mcp_app(settings, dsn) as mcp:
            async with mcp.client(linked["alice-web"]) as member:
                found = ok(await member.call_tool("search_messages", {"query": "private dm note"}))
            async with mcp.client(turn) as agent:
                got = ok(await agent.call_tool("search_history", {"query": "private dm note"}))
        return (
            da1_id in [m["message_id"] for m in found["messages"]],
            da1_id in got["message_ids"],
        )

    pending = await confirm(client, linked["alice-web"], await start_code(client, linked["alice"]))
    assert await reached() == (False, False)
    await approve(client, linked["alice"], pending["id"])
    assert await reached() == (True, True)


async def test_the_predicate_allows_a_linked_audience_only_once_the_link_is_approved(
    client: GraphQLClient, db: asyncpg.Connection, linked: dict[str, str]
) -> None:
    """Unit level, on the SQL the surfaces inline: the allowed audiences of alice-web's
    destination, and speaker REQUESTER's identities, hold alice's DM only once approved."""
    from app.data.eligibility import ALLOWED_AUDIENCE_IDS
    from app.data.identity_links import linked_identities

    web = one(
        await db.fetchrow(
            "select workspace_id, id, namespace_id from actors where key = $1", "alice-web"
        )
    )
    alice = await db.fetchval("select id from actors where key = 'alice'")
    dm = await db.fetchval("select origin_audience_id from scopes where key = 'dm-alice'")
    destination = (web["workspace_id"], "members", web["namespace_id"], [web["id"]])

    async def opened() -> tuple[bool, bool]:
        allowed = await db.fetchval(f"select {ALLOWED_AUDIENCE_IDS}", *destination)
        speakers = await db.fetchval(
            f"select {linked_identities('$2::bigint')}", web["workspace_id"], web["id"]
        )
        return dm in allowed, alice in speakers

    pending = await confirm(client, linked["alice-web"], await start_code(client, linked["alice"]))
    assert await opened() == (False, False)
    await approve(client, linked["alice"], pending["id"])
    assert await opened() == (True, True)
