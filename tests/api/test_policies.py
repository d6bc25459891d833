"""Each field declares its policy where it is (app.api.policies): who may call it (a token
policy of app.access, or PARENT for a relation of an already authorized object) and, for a
list, what the cost model counts. This walks the schema and fails on a field missing either;
then checks the policies are what is enforced, and what the descriptions say."""

from __future__ import annotations

from typing import Any

import asyncpg
from graphql import GraphQLObjectType, get_nullable_type, is_list_type
from strawberry.types.field import StrawberryField

from app import access
from app.api.limits import STATEMENT_COST, measure
from app.api.policies import PARENT, Page, definition_of, policy_of
from app.api.schema import schema
from tests.client import GraphQLClient
from tests.personas import load_personas

ROOTS = ("Query", "Mutation")


def _fields() -> list[tuple[str, str, Any, Any]]:
    out = []
    for type_name, graphql_type in sorted(schema._schema.type_map.items()):
        if type_name.startswith("__") or not isinstance(graphql_type, GraphQLObjectType):
            continue
        for name, field in graphql_type.fields.items():
            out.append((type_name, name, field, definition_of(graphql_type, name)))
    return out


def test_every_field_that_runs_code_declares_who_may_call_it() -> None:
    missing = []
    for type_name, name, _, definition in _fields():
        runs_code = isinstance(definition, StrawberryField) and definition.base_resolver
        if type_name in ROOTS or runs_code:
            declared = policy_of(definition)
            if declared is None or declared.access is None:
                missing.append(f"{type_name}.{name}")
    assert missing == []


def test_every_root_field_is_checked_against_a_token_policy() -> None:
    for type_name, name, _, definition in _fields():
        if type_name in ROOTS:
            declared = policy_of(definition)
            assert declared is not None and isinstance(declared.access, access.Policy), name
            assert definition.permission_classes, name


def test_every_list_and_every_page_declares_its_size() -> None:
    missing = []
    for type_name, name, field, definition in _fields():
        declared = policy_of(definition)
        is_list = is_list_type(get_nullable_type(field.type))
        paged = "first" in field.args or "last" in field.args
        if (is_list or paged) and (declared is None or declared.size is None):
            missing.append(f"{type_name}.{name}")
        if paged and declared is not None and not isinstance(declared.size, Page):
            missing.append(f"{type_name}.{name} (paged by first/last: Page)")
    assert missing == []


def test_descriptions_say_the_policy() -> None:
    for type_name, name, field, definition in _fields():
        declared = policy_of(definition)
        if declared is None or not isinstance(declared.access, access.Policy):
            continue
        policy = declared.access
        if policy.kinds == frozenset(access.TokenKind):
            assert field.description.endswith("Any token."), f"{type_name}.{name}"
        else:
            assert policy.wording() in field.description, f"{type_name}.{name}"


async def test_a_connector_reads_nothing_but_its_workspaces_name(
    client: GraphQLClient, db: asyncpg.Connection
) -> None:
    """README: a connector token applies changes and reads nothing."""
    from app.data.tokens import issue_connector_token

    await load_personas(db)
    connector = await issue_connector_token(db, "acme")
    mine = await client.gql("{ viewer { workspace { key name } } }", token=connector)
    assert mine == {"viewer": {"workspace": {"key": "acme", "name": "Acme"}}}
    for field in ("members { key }", "agents { key }", "scopes { key }"):
        refused = await client.post(f"{{ viewer {{ workspace {{ {field} }} }} }}", token=connector)
        assert refused.codes == ["FORBIDDEN"], (field, refused.body)
        assert "Reading the workspace's directory needs" in refused.errors[0]["message"]


async def test_the_wrong_token_kind_is_forbidden_with_the_policy_wording(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    await load_personas(db)
    agent = await issue_token("agent", "acme", "helper")
    refused = await client.post(
        '{ messageSearch(query: "acme") { edges { cursor } } }', token=agent
    )
    assert refused.codes == ["FORBIDDEN"]
    assert refused.errors[0]["message"] == "messageSearch needs a member (rcm_) token"


def test_a_field_that_runs_a_statement_per_call_is_costed_per_call() -> None:
    from graphql import parse

    declared = policy_of(definition_of(schema._schema.type_map["Scope"], "messages"))
    assert declared is not None and declared.statement and declared.access is PARENT
    one = measure(
        schema._schema,
        parse("{ node(id: 1) { ... on Scope { messages { edges { cursor } } } } }"),
        None,
        {},
    )
    listed = measure(
        schema._schema,
        parse("{ viewer { workspace { scopes { messages(first: 1) { edges { cursor } } } } } }"),
        None,
        {},
    )
    assert one.cost > STATEMENT_COST
    assert listed.cost > 100 * STATEMENT_COST


def test_only_an_agent_reaches_a_turns_operations_through_a_turn() -> None:
    """MCP's `turn` argument (app.access.allows_through_turn): an agent token may perform what
    a turn token may, by naming its turn; no other kind, and nothing a turn may not do."""
    from app.access import (
        HISTORY_SEARCH,
        MESSAGE_SEARCH,
        POST_REPLY,
        START_TURN,
        TokenKind,
        allows_through_turn,
    )

    for turn_operation in (HISTORY_SEARCH, POST_REPLY):
        assert allows_through_turn(turn_operation, TokenKind.AGENT)
        for kind in (TokenKind.MEMBER, TokenKind.CONNECTOR, TokenKind.TURN):
            assert not allows_through_turn(turn_operation, kind)
    for other in (MESSAGE_SEARCH, START_TURN):
        assert not allows_through_turn(other, TokenKind.AGENT)


def test_a_remembered_shape_follows_the_variables_that_size_its_lists() -> None:
    """measure_text keeps a document's shape per process; each request's page sizes and id
    lists still count: every answer equals a fresh walk's, whatever was asked before."""
    from graphql import parse

    from app.api.limits import measure_text

    text = (
        "query($q: String!, $n: Int, $ids: [ID!]!, $skip: Boolean!) {"
        " messageSearch(query: $q, first: $n) { edges { cursor node { key } } }"
        " nodes(ids: $ids) @skip(if: $skip) { id } }"
    )
    document = parse(text)
    cases: list[dict[str, Any]] = [
        {"q": "a", "n": 1, "ids": ["x"], "skip": False},
        {"q": "b", "n": 100, "ids": ["x"], "skip": True},
        {"q": "a", "n": 1, "ids": ["x", "y", "z"], "skip": False},
        {"q": "a", "n": True, "ids": [], "skip": False},
        {"q": "a", "n": -5, "ids": "x", "skip": False},
        {"q": "a", "n": None, "ids": ["x"] * 40, "skip": False},
        {"q": "a", "n": 1, "ids": ["x"], "skip": False},
        {"q": "a", "n": 100, "ids": ["x"] * 40, "skip": False},
    ]
    walked = [measure(schema._schema, document, None, v) for v in cases]
    assert len({w.cost for w in walked}) >= 5  # the cases do size the lists differently
    for _ in range(2):
        for variables, expected in zip(cases, walked, strict=True):
            assert measure_text(schema._schema, document, text, None, variables) == expected
