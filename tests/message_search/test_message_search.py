"""messageSearch privacy: each rule of docs/design.md (Eligibility) has a test that a person finds what they may
read and a test that they never find what they may not (personas in tests/personas.py)."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from tests.message_search_support import SEARCH, author, global_id, keys, search
from tests.personas import load_personas


@pytest.fixture
async def tokens(db: asyncpg.Connection, issue_token: Any) -> dict[str, str]:
    await load_personas(db)
    out = {who: await issue_token("member", "acme", who) for who in ("alice", "bob", "carol")}
    out["sam1"] = await issue_token("member", "acme", "sam1")
    out["mallory"] = await issue_token("member", "globex", "mallory")
    out["helper"] = await issue_token("agent", "acme", "helper")
    return out


async def test_own_dm_is_found_by_its_person(client: Any, tokens: dict[str, str]) -> None:
    assert await keys(client, tokens["alice"], "salary") == ["da1"]
    assert await keys(client, tokens["bob"], "private") == ["db1"]


async def test_dm_is_never_found_by_another_person(client: Any, tokens: dict[str, str]) -> None:
    for who in ("bob", "carol", "sam1", "mallory"):
        assert await keys(client, tokens[who], "salary") == [], who
    # "private" is in both DMs: each person finds only their own.
    assert await keys(client, tokens["alice"], "private") == ["da1"]
    assert await keys(client, tokens["carol"], "private") == []


async def test_public_channel_is_found_by_someone_who_never_joined(
    client: Any, tokens: dict[str, str]
) -> None:
    # carol is not a member of general; a public channel is fair game.
    assert await keys(client, tokens["carol"], "friday") == ["g2", "g1"]
    # Its thread inherits the channel's audience.
    assert await keys(client, tokens["carol"], "cutover") == ["t1"]


async def test_private_channel_is_found_only_by_its_members(
    client: Any, tokens: dict[str, str]
) -> None:
    assert await keys(client, tokens["alice"], "budget") == ["s1"]
    for who in ("bob", "carol", "sam1"):
        assert await keys(client, tokens[who], "budget") == [], who


async def test_shared_channel_is_found_only_by_its_members(
    client: Any, tokens: dict[str, str]
) -> None:
    assert await keys(client, tokens["carol"], "roadmap") == ["p1"]
    assert await keys(client, tokens["alice"], "roadmap") == ["p1"]
    assert await keys(client, tokens["bob"], "roadmap") == []


async def test_another_workspace_is_never_found(client: Any, tokens: dict[str, str]) -> None:
    assert await keys(client, tokens["mallory"], "acme") == ["x1"]
    assert await keys(client, tokens["mallory"], "budget") == ["x1"]
    assert await keys(client, tokens["alice"], "globex") == []


async def test_message_without_evidence_is_never_found(client: Any, tokens: dict[str, str]) -> None:
    for who in ("alice", "bob", "carol"):
        assert await keys(client, tokens[who], "legacy") == [], who


async def test_reply_built_from_a_dm_is_hidden_from_whoever_the_dm_is_hidden_from(
    client: Any, tokens: dict[str, str]
) -> None:
    # g3 sits in the public channel, but its lineage holds da1 (alice's DM).
    assert await keys(client, tokens["alice"], "summary") == ["g3"]
    for who in ("bob", "carol", "sam1"):
        assert await keys(client, tokens[who], "summary") == [], who


async def test_reply_built_from_a_private_memory_is_hidden_from_others(
    client: Any, tokens: dict[str, str]
) -> None:
    assert await keys(client, tokens["alice"], "recap") == ["g4"]
    for who in ("bob", "carol", "sam1"):
        assert await keys(client, tokens[who], "recap") == [], who


async def test_everything_a_person_finds_for_a_common_word(
    client: Any, tokens: dict[str, str]
) -> None:
    assert await keys(client, tokens["bob"], "acme") == ["g8", "g7", "g6", "db1", "t1", "g2", "g1"]
    assert await keys(client, tokens["carol"], "acme") == ["g8", "g7", "g6", "p1", "t1", "g2", "g1"]


async def test_member_filter_keeps_that_persons_messages_and_sams_stay_distinct(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    sam1, sam2 = await global_id(db, "Member", "sam1"), await global_id(db, "Member", "sam2")
    assert await keys(client, tokens["carol"], "hello", author=author("MEMBER", sam1)) == ["g6"]
    assert await keys(client, tokens["carol"], "hello", author=author("MEMBER", sam2)) == ["g7"]
    bob = await global_id(db, "Member", "bob")
    assert await keys(client, tokens["bob"], "acme", author=author("MEMBER", bob)) == [
        "db1",
        "t1",
        "g2",
    ]


async def test_member_filter_never_widens_what_a_person_may_read(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    bob = await global_id(db, "Member", "bob")
    # bob's DM and his evidence-less g5 stay hidden from carol under a filter on bob.
    assert await keys(client, tokens["carol"], "acme", author=author("MEMBER", bob)) == [
        "t1",
        "g2",
    ]


async def test_agent_filter_keeps_that_agents_messages(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    helper = await global_id(db, "Agent", "helper")
    assert await keys(client, tokens["alice"], "acme", author=author("AGENT", helper)) == [
        "g4",
        "g3",
        "da2",
    ]
    assert await keys(client, tokens["bob"], "acme", author=author("AGENT", helper)) == []
    scout = await global_id(db, "Agent", "scout")
    assert await keys(client, tokens["carol"], "acme", author=author("AGENT", scout)) == ["g8"]


async def test_member_agents_filter_keeps_agents_of_that_person_not_their_own(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    alice, bob = await global_id(db, "Member", "alice"), await global_id(db, "Member", "bob")
    assert await keys(client, tokens["alice"], "acme", author=author("MEMBER_AGENTS", alice)) == [
        "g4",
        "g3",
        "da2",
    ]
    assert await keys(client, tokens["carol"], "acme", author=author("MEMBER_AGENTS", bob)) == [
        "g8"
    ]
    # carol owns no agent.
    carol = await global_id(db, "Member", "carol")
    assert await keys(client, tokens["carol"], "acme", author=author("MEMBER_AGENTS", carol)) == []


async def test_well_formed_ids_of_the_wrong_kind_or_of_nothing_match_nothing(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    helper_pk = await db.fetchval("select id from actors where key = 'helper'")
    alice = await global_id(db, "Member", "alice")
    helper = await global_id(db, "Agent", "helper")
    mallory = await global_id(db, "Member", "mallory")
    general = await global_id(db, "Scope", "general")
    from app.request.ids import encode_id

    for kind, id_ in [
        ("MEMBER", helper),  # an agent's id under MEMBER
        ("MEMBER", encode_id("Member", helper_pk)),  # Member-typed id of an agent
        ("AGENT", alice),  # a member's id under AGENT
        ("MEMBER_AGENTS", helper),  # agents own no agents
        ("MEMBER", mallory),  # another workspace's person
        ("MEMBER", encode_id("Member", 987654321)),  # nobody
        ("AGENT", general),  # a scope's id
    ]:
        assert await keys(client, tokens["alice"], "acme", author=author(kind, id_)) == [], kind


async def test_scope_filter_narrows_to_that_scope(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    general = await global_id(db, "Scope", "general")
    thread = await global_id(db, "Scope", "t-general")
    assert await keys(client, tokens["carol"], "acme", scope=general) == [
        "g8",
        "g7",
        "g6",
        "g2",
        "g1",
    ]
    assert await keys(client, tokens["carol"], "acme", scope=thread) == ["t1"]


async def test_scope_filter_on_a_scope_the_person_may_not_read_matches_nothing(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    for scope in ("secret", "dm-alice", "lobby"):
        scope_id = await global_id(db, "Scope", scope)
        assert await keys(client, tokens["bob"], "acme", scope=scope_id) == [], scope
    message_id = await global_id(db, "Message", "g1")
    assert await keys(client, tokens["bob"], "acme", scope=message_id) == []


@pytest.mark.parametrize(
    ("variables", "literal"),
    [
        ({"author": {"kind": "MEMBER", "id": "not-an-id"}}, 'author: {kind: MEMBER, id: "@@"}'),
        ({"author": {"kind": "MEMBER"}}, "author: {kind: MEMBER}"),
        ({"author": {"id": "TWVtYmVyOjE"}}, 'author: {id: "TWVtYmVyOjE"}'),
        (
            {"author": {"kind": "OWNER", "id": "TWVtYmVyOjE"}},
            'author: {kind: OWNER, id: "TWVtYmVyOjE"}',
        ),
        ({"scope": "not-an-id"}, 'scopeId: "%%%"'),
    ],
)
async def test_malformed_or_partial_filters_are_request_errors(
    client: Any, tokens: dict[str, str], variables: dict[str, Any], literal: str
) -> None:
    result = await client.post(SEARCH, {"q": "acme", **variables}, token=tokens["alice"])
    assert result.status == 400, result.body
    assert result.codes == ["BAD_USER_INPUT"]
    assert "data" not in result.body
    inline = await client.post(
        f'{{ messageSearch(query: "acme", {literal}) {{ edges {{ cursor }} }} }}',
        token=tokens["alice"],
    )
    assert inline.status == 400, inline.body
    assert inline.codes == ["BAD_USER_INPUT"]
    legacy = await client.post(
        SEARCH, {"q": "acme", **variables}, token=tokens["alice"], accept="application/json"
    )
    assert legacy.codes == ["BAD_USER_INPUT"]


@pytest.mark.parametrize("variables", [{"first": 0}, {"first": 101}, {"q": "   "}, {"q": "-acme"}])
async def test_out_of_range_input_is_bad_user_input(
    client: Any, tokens: dict[str, str], variables: dict[str, Any]
) -> None:
    result = await client.post(SEARCH, {"q": "acme", **variables}, token=tokens["alice"])
    assert result.codes == ["BAD_USER_INPUT"], result.body


async def test_agent_and_turn_tokens_are_forbidden(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    from app.history_search.turns import start_turn_by_keys

    turn = await start_turn_by_keys(
        db,
        workspace_key="acme",
        agent_key="helper",
        scope_key="general",
        requester_key="alice",
        trigger_key=None,
        window=5,
    )
    for token in (tokens["helper"], turn):
        result = await client.post(SEARCH, {"q": "acme"}, token=token)
        assert result.codes == ["FORBIDDEN"], result.body


async def test_a_query_of_only_stop_words_finds_nothing(
    client: Any, tokens: dict[str, str]
) -> None:
    connection = await search(client, tokens["alice"], "the and of")
    assert connection["edges"] == []
    assert connection["pageInfo"] == {"hasNextPage": False, "endCursor": None}


async def test_hits_carry_where_they_were_said(client: Any, tokens: dict[str, str]) -> None:
    connection = await search(client, tokens["carol"], "cutover")
    node = connection["edges"][0]["node"]
    assert node["seq"] == 1
    assert node["scope"] == {
        "key": "t-general",
        "kind": "thread",
        "name": None,
        "parent": {"key": "general"},
    }
    assert node["author"] == {"__typename": "Member", "key": "bob"}


async def test_aliased_searches_in_one_request_each_run_and_audit(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    data = await client.gql(
        '{ a: messageSearch(query: "friday") { edges { node { key } } }'
        ' b: messageSearch(query: "budget") { edges { node { key } } }'
        " s: searchStatus { ready } }",
        token=tokens["alice"],
    )
    assert [e["node"]["key"] for e in data["a"]["edges"]] == ["g2", "g1"]
    assert [e["node"]["key"] for e in data["b"]["edges"]] == ["s1"]
    assert data["s"] == {"ready": True}
    assert await db.fetchval("select count(*) from search_audit") == 2


async def test_every_scope_and_author_filter_only_removes_rows(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    """For each viewer, each filter over every scope and actor of both workspaces: the filtered
    result is exactly the unfiltered result narrowed by that filter — never a row more."""
    rows = await db.fetch(
        "select m.key, s.key as scope, a.key as author, a.kind, o.key as owner from messages m"
        " join scopes s on s.workspace_id = m.workspace_id and s.id = m.scope_id"
        " join actors a on a.workspace_id = m.workspace_id and a.id = m.author_id"
        " left join actors o on o.workspace_id = a.workspace_id and o.id = a.owner_id"
    )
    facts = {r["key"]: r for r in rows}
    scopes = [r["key"] for r in await db.fetch("select key from scopes")]
    actors = await db.fetch("select key, kind from actors")
    for viewer in ("alice", "bob", "carol"):
        everything = await keys(client, tokens[viewer], "acme")
        # With nothing to narrow, "never a row more" would hold for any filter.
        assert everything, f"{viewer} finds nothing: the property would hold vacuously"
        for scope in scopes:
            got = await keys(
                client, tokens[viewer], "acme", scope=await global_id(db, "Scope", scope)
            )
            assert got == [k for k in everything if facts[k]["scope"] == scope], (viewer, scope)
        for actor in actors:
            type_name = "Member" if actor["kind"] == "member" else "Agent"
            actor_id = await global_id(db, type_name, actor["key"])
            kind_of, key = actor["kind"], actor["key"]
            for kind in ("MEMBER", "AGENT", "MEMBER_AGENTS"):
                got = await keys(client, tokens[viewer], "acme", author=author(kind, actor_id))
                if kind == "MEMBER_AGENTS":
                    expected = [
                        k for k in everything if facts[k]["owner"] == key and kind_of == "member"
                    ]
                else:
                    expected = [
                        k
                        for k in everything
                        if kind_of == kind.lower() and facts[k]["author"] == key
                    ]
                assert got == expected, (
                    viewer,
                    kind,
                    actor["key"],
                )
