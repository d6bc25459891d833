"""messageSearch operators typed in the query (docs/api.md, Operators), through GraphQL over
HTTP: every operator of the table, negation, OR within an operator and AND across, date
boundaries in two time zones, colons that stay text, unresolvable = hidden, interpretation,
cursor binding, the audit row, and the errors. The property that operators never widen a search
is tests/message_search/test_message_search_operators_property.py."""

from __future__ import annotations

import json
from typing import Any

import asyncpg
import pytest

from tests.message_search_support import author, global_id
from tests.personas import load
from tests.rows import one

SEARCH = """
query Search($q: String!, $first: Int, $after: String, $scope: ID, $author: AuthorFilter,
             $since: DateTime, $until: DateTime, $tz: String) {
  messageSearch(query: $q, first: $first, after: $after, scopeId: $scope, author: $author,
                since: $since, until: $until, timeZone: $tz) {
    edges { cursor node { key } highlights { start end } }
    pageInfo { hasNextPage endCursor }
    interpretation {
      text since until
      operators { name value negated known matches { id __typename } }
    }
  }
}
"""


def ops_fixture() -> dict[str, Any]:
    """Workspace `ops`: ann, ben, carl, and two people both named "Sam Park"; ann's agent bot,
    ben's agent scout. `room` and `infra` are public (carl is in neither), `t-room` a thread
    under room, `hush` private to ann and ben, `vault` private to carl, `dm-ann-bot` ann's DM
    with bot, `dm-ann-ben` ann and ben's DM. Every message says "deploy"."""

    def msg(key: str, scope: str, who: str, at: str, body: str) -> dict[str, Any]:
        return {"key": key, "scope": scope, "author": who, "at": at, "body": body}

    return {
        "workspace": {"key": "ops", "name": "Ops"},
        "namespace": "slack:ops",
        "members": [
            {"key": "ann", "name": "Ann Lee"},
            {"key": "ben", "name": "Ben"},
            {"key": "carl", "name": "Carl"},
            {"key": "sam1", "name": "Sam Park"},
            {"key": "sam2", "name": "Sam Park"},
        ],
        "agents": [
            {"key": "bot", "name": "Bot", "owner": "ann"},
            {"key": "scout", "name": "Scout", "owner": "ben"},
        ],
        "scopes": [
            {
                "key": "room",
                "kind": "channel",
                "visibility": "public",
                "name": "room",
                "members": ["ann", "ben", "sam1", "sam2", "bot", "scout"],
            },
            {
                "key": "infra",
                "kind": "channel",
                "visibility": "public",
                "name": "Infra Team",
                "members": ["ann", "ben", "bot", "scout"],
            },
            {"key": "t-room", "kind": "thread", "parent": "room", "root": "r1"},
            {
                "key": "hush",
                "kind": "channel",
                "visibility": "private",
                "name": "hush",
                "members": ["ann", "ben"],
            },
            {
                "key": "vault",
                "kind": "channel",
                "visibility": "private",
                "name": "vault",
                "members": ["carl"],
            },
            {"key": "dm-ann-bot", "kind": "dm", "members": ["ann", "bot"]},
            {"key": "dm-ann-ben", "kind": "dm", "members": ["ann", "ben"]},
        ],
        "memories": [],
        "messages": [
            # 23:30 UTC on March 1 is 00:30 on March 2 in Paris (UTC+1 in March).
            msg("r1", "room", "ann", "2026-03-01T23:30:00Z", "deploy plan for friday"),
            msg("r2", "room", "ben", "2026-03-02T00:30:00Z", "deploy done on staging"),
            msg("r3", "room", "sam1", "2026-03-02T08:00:00Z", "deploy notes from sam one"),
            msg("r4", "room", "sam2", "2026-03-02T09:00:00Z", "deploy notes from sam two"),
            msg("t1", "t-room", "ben", "2026-03-02T10:00:00Z", "deploy thread reply"),
            msg("i1", "infra", "bot", "2026-03-02T11:00:00Z", "deploy infra summary by bot"),
            msg(
                "i2",
                "infra",
                "scout",
                "2026-03-02T12:00:00Z",
                "deploy link http://acme.example/in:room at 10:30 foo:bar",
            ),
            msg("h1", "hush", "ann", "2026-03-02T13:00:00Z", "deploy hush hush"),
            msg("v1", "vault", "carl", "2026-03-02T14:00:00Z", "deploy vault secrets"),
            msg("d1", "dm-ann-bot", "ann", "2026-03-02T15:00:00Z", "deploy question for bot"),
            msg("d2", "dm-ann-bot", "bot", "2026-03-02T15:01:00Z", "deploy answer from bot"),
            msg("d3", "dm-ann-ben", "ben", "2026-03-02T16:00:00Z", "deploy chat ann and ben"),
            # Late on March 2 in New York, already March 3 in UTC.
            msg("r5", "room", "ann", "2026-03-03T03:00:00Z", "deploy late evening"),
        ],
    }


@pytest.fixture
async def tokens(db: asyncpg.Connection, issue_token: Any) -> dict[str, str]:
    await load(db, ops_fixture())
    return {who: await issue_token("member", "ops", who) for who in ("ann", "ben", "carl")}


async def run(client: Any, token: str, q: str, **variables: Any) -> Any:
    variables.setdefault("first", 100)
    data = await client.gql(SEARCH, {"q": q, **variables}, token=token)
    return data["messageSearch"]


async def found(client: Any, token: str, q: str, **variables: Any) -> list[str]:
    return [e["node"]["key"] for e in (await run(client, token, q, **variables))["edges"]]


async def error_of(client: Any, token: str, q: str, **variables: Any) -> dict[str, Any]:
    result = await client.post(SEARCH, {"q": q, "first": 10, **variables}, token=token)
    errors = result.body["errors"]
    assert result.body.get("data") is None
    return dict(errors[0])


# --- every row of the table ---------------------------------------------------------------


async def test_from_by_key_with_or_without_the_sigil_and_me(
    client: Any, tokens: dict[str, str]
) -> None:
    ann = tokens["ann"]
    assert await found(client, ann, "deploy from:@ben") == ["d3", "t1", "r2"]
    assert await found(client, ann, "deploy from:ben") == ["d3", "t1", "r2"]
    assert await found(client, ann, "deploy FROM:@BEN") == ["d3", "t1", "r2"]
    assert await found(client, ann, "deploy from:me") == ["r5", "d1", "h1", "r1"]
    # An agent by key.
    assert await found(client, ann, "deploy from:@bot") == ["d2", "i1"]


async def test_from_a_display_name_with_spaces_matches_everyone_so_named(
    client: Any, tokens: dict[str, str]
) -> None:
    got = await run(client, tokens["ann"], 'deploy from:"Sam Park"')
    assert [e["node"]["key"] for e in got["edges"]] == ["r4", "r3"]
    (op,) = got["interpretation"]["operators"]
    assert op["value"] == "Sam Park" and op["known"] is True
    assert len(op["matches"]) == 2
    assert {m["__typename"] for m in op["matches"]} == {"Member"}
    # The name is one value, not "Sam" and a word "Park": the words left are only "deploy".
    assert got["interpretation"]["text"] == "deploy"
    # `@key` names exactly one of them.
    assert await found(client, tokens["ann"], "deploy from:@sam2") == ["r4"]
    # A display name in any case, also with the sigil when no key is that name.
    assert await found(client, tokens["ann"], 'deploy from:@"sam park"') == ["r4", "r3"]


async def test_agents_of_a_member_or_me(client: Any, tokens: dict[str, str]) -> None:
    ann = tokens["ann"]
    assert await found(client, ann, "deploy agents-of:@ann") == ["d2", "i1"]
    assert await found(client, ann, "deploy agents-of:me") == ["d2", "i1"]
    assert await found(client, ann, "deploy agents-of:ben") == ["i2"]
    # The member's own messages are not their agents'.
    assert "r1" not in await found(client, ann, "deploy agents-of:me")
    got = await run(client, ann, "deploy agents-of:@ann")
    (op,) = got["interpretation"]["operators"]
    assert [m["__typename"] for m in op["matches"]] == ["Member"]


async def test_in_a_channel_by_key_or_name_includes_its_threads(
    client: Any, tokens: dict[str, str], db: asyncpg.Connection
) -> None:
    ann = tokens["ann"]
    room = ["r5", "t1", "r4", "r3", "r2", "r1"]
    assert await found(client, ann, "deploy in:#room") == room
    assert await found(client, ann, "deploy in:room") == room
    assert await found(client, ann, 'deploy in:#"Infra Team"') == ["i2", "i1"]
    assert await found(client, ann, "deploy in:#infra") == ["i2", "i1"]
    # A thread named by its key: only the thread.
    assert await found(client, ann, "deploy in:t-room") == ["t1"]
    got = await run(client, ann, "deploy in:#room")
    (op,) = got["interpretation"]["operators"]
    assert op["matches"] == [{"id": await global_id(db, "Scope", "room"), "__typename": "Scope"}]


async def test_in_a_person_is_the_viewers_dm_with_them(
    client: Any, tokens: dict[str, str], db: asyncpg.Connection
) -> None:
    assert await found(client, tokens["ann"], "deploy in:@bot") == ["d2", "d1"]
    assert await found(client, tokens["ann"], "deploy in:@ben") == ["d3"]
    assert await found(client, tokens["ben"], "deploy in:@ann") == ["d3"]
    got = await run(client, tokens["ann"], "deploy in:@bot")
    (op,) = got["interpretation"]["operators"]
    assert op["known"] is True
    assert [m["id"] for m in op["matches"]] == [await global_id(db, "Scope", "dm-ann-bot")]
    # ben has no DM with bot: known false, nothing matches (never ann's DM with bot).
    got = await run(client, tokens["ben"], "deploy in:@bot")
    assert got["edges"] == []
    assert got["interpretation"]["operators"][0]["known"] is False


async def test_since_until_and_on_are_whole_days_in_utc_by_default(
    client: Any, tokens: dict[str, str]
) -> None:
    ann = tokens["ann"]
    assert await found(client, ann, "deploy on:2026-03-01") == ["r1"]
    assert await found(client, ann, "deploy until:2026-03-01") == ["r1"]
    assert await found(client, ann, "deploy since:2026-03-03") == ["r5"]
    assert "r1" not in await found(client, ann, "deploy since:2026-03-02")
    assert await found(client, ann, "deploy since:2026-03-02 until:2026-03-02 from:@ben") == [
        "d3",
        "t1",
        "r2",
    ]
    # An instant: since inclusive, until exclusive, as the arguments.
    assert await found(
        client, ann, "deploy since:2026-03-02T15:00:00Z until:2026-03-02T16:00:00Z"
    ) == [
        "d2",
        "d1",
    ]


async def test_date_boundaries_follow_the_time_zone(client: Any, tokens: dict[str, str]) -> None:
    ann = tokens["ann"]
    # r1 is 23:30 UTC on March 1: March 2 in Paris.
    assert await found(client, ann, "deploy on:2026-03-01", tz="Europe/Paris") == []
    assert "r1" in await found(client, ann, "deploy on:2026-03-02", tz="Europe/Paris")
    # r5 is 03:00 UTC on March 3: still March 2 in New York (UTC-5).
    ny = await found(client, ann, "deploy on:2026-03-02", tz="America/New_York")
    # ... and r1, r2 (23:30 and 00:30 UTC) are still March 1 there.
    assert "r5" in ny and "r3" in ny and not {"r1", "r2"} & set(ny)
    assert await found(client, ann, "deploy since:2026-03-03", tz="America/New_York") == []
    got = await run(client, ann, "deploy on:2026-03-02", tz="Europe/Paris")
    assert got["interpretation"]["since"].startswith("2026-03-01T23:00:00")
    assert got["interpretation"]["until"].startswith("2026-03-02T23:00:00")


async def test_time_bounds_intersect_with_each_other_and_the_arguments(
    client: Any, tokens: dict[str, str]
) -> None:
    ann = tokens["ann"]
    got = await found(
        client, ann, "deploy since:2026-03-02 since:2026-03-01", until="2026-03-02T09:30:00Z"
    )
    assert got == ["r4", "r3", "r2"]
    # An empty intersection matches nothing (it is not an error).
    assert await found(client, ann, "deploy since:2026-03-03 until:2026-03-02") == []
    assert await found(client, ann, "deploy on:2026-03-01", since="2026-03-02T00:00:00Z") == []


# --- negation, OR and AND -------------------------------------------------------------------


async def test_negated_operators_exclude(client: Any, tokens: dict[str, str]) -> None:
    ann = tokens["ann"]
    everything = await found(client, ann, "deploy")
    without_ben = await found(client, ann, "deploy -from:@ben")
    assert without_ben == [k for k in everything if k not in ("d3", "t1", "r2")]
    # -in: a channel excludes its threads too.
    not_room = await found(client, ann, "deploy -in:#room")
    assert not set(not_room) & {"r1", "r2", "r3", "r4", "r5", "t1"}
    assert set(not_room) == set(everything) - {"r1", "r2", "r3", "r4", "r5", "t1"}
    assert "i1" not in await found(client, ann, "deploy -agents-of:me")
    assert "r1" in await found(client, ann, "deploy -agents-of:me")


async def test_values_of_one_operator_or_and_different_operators_and(
    client: Any, tokens: dict[str, str], db: asyncpg.Connection
) -> None:
    ann = tokens["ann"]
    assert await found(client, ann, "deploy from:@ben from:@sam1") == ["d3", "t1", "r3", "r2"]
    assert await found(client, ann, "deploy in:#infra in:@bot") == ["d2", "d1", "i2", "i1"]
    assert await found(client, ann, "deploy from:@ben in:#room") == ["t1", "r2"]
    # from: and agents-of: are different operators: both must hold.
    assert await found(client, ann, "deploy from:@bot agents-of:ann") == ["d2", "i1"]
    assert await found(client, ann, "deploy from:@ben agents-of:ann") == []
    # With the arguments too.
    ben = await global_id(db, "Member", "ben")
    assert await found(client, ann, "deploy in:#room", author=author("MEMBER", ben)) == ["t1", "r2"]


async def test_a_query_of_operators_only_lists_newest_first(
    client: Any, tokens: dict[str, str]
) -> None:
    ann = tokens["ann"]
    assert await found(client, ann, "from:@ben") == ["d3", "t1", "r2"]
    assert await found(client, ann, "in:#room -from:me") == ["t1", "r4", "r3", "r2"]
    assert await found(client, ann, "in:#room -notes") == ["r5", "t1", "r2", "r1"]
    got = await run(client, ann, "from:@ben")
    assert got["interpretation"]["text"] == ""
    assert all(e["highlights"] == [] for e in got["edges"])
    # Without words or operators the query is still refused.
    assert "at least one word" in (await error_of(client, ann, "  "))["message"]


# --- what stays text --------------------------------------------------------------------------


async def test_colons_that_are_not_operators_stay_text(client: Any, tokens: dict[str, str]) -> None:
    ann = tokens["ann"]
    for q in ("http://acme.example/in:room", "10:30", "foo:bar", "deploy link:x"):
        got = await run(client, ann, q)
        assert got["interpretation"]["operators"] == [], q
    assert await found(client, ann, "foo:bar") == ["i2"]
    assert await found(client, ann, "http://acme.example/in:room") == ["i2"]
    # A quoted phrase stays a phrase even with an operator name inside it.
    got = await run(client, ann, '"from:ben" deploy')
    assert got["interpretation"]["operators"] == []


async def test_an_unclosed_quote_does_not_swallow_the_rest(
    client: Any, tokens: dict[str, str]
) -> None:
    got = await run(client, tokens["ann"], 'from:"ben in:#room deploy')
    ops = [(o["name"], o["value"]) for o in got["interpretation"]["operators"]]
    assert ops == [("from", "ben"), ("in", "#room")]
    assert got["interpretation"]["text"] == "deploy"
    assert [e["node"]["key"] for e in got["edges"]] == ["t1", "r2"]


# --- unresolvable = hidden ----------------------------------------------------------------------


async def test_a_hidden_channel_answers_exactly_as_a_missing_one(
    client: Any, tokens: dict[str, str]
) -> None:
    ann = tokens["ann"]
    hidden = await run(client, ann, "deploy in:#vault")
    missing = await run(client, ann, "deploy in:#nosuch")
    assert hidden["edges"] == missing["edges"] == []

    def without_values(r: Any) -> list[Any]:
        return [{**o, "value": ""} for o in r["interpretation"]["operators"]]

    assert without_values(hidden) == without_values(missing)
    assert hidden["interpretation"]["operators"][0]["known"] is False
    assert hidden["interpretation"]["operators"][0]["matches"] == []
    # carl, who may read it, finds it.
    assert await found(client, tokens["carl"], "deploy in:#vault") == ["v1"]
    # A DM carl is not in is just as unknown to him.
    assert (await run(client, tokens["carl"], "deploy in:@ann"))["edges"] == []


async def test_a_negated_unknown_value_excludes_nothing(
    client: Any, tokens: dict[str, str]
) -> None:
    ann = tokens["ann"]
    everything = await found(client, ann, "deploy")
    for q in ("deploy -in:#vault", "deploy -in:#nosuch", "deploy -from:@nobody"):
        assert await found(client, ann, q) == everything, q
    # A positive unknown one matches nothing: never dropped.
    for q in ("deploy from:@nobody", "deploy in:#vault", "deploy agents-of:@nobody"):
        assert await found(client, ann, q) == [], q
    # OR with an unknown value is OR with nothing.
    assert await found(client, ann, "deploy from:@ben from:@nobody") == ["d3", "t1", "r2"]


async def test_a_private_channel_name_never_decides_anything(
    client: Any, tokens: dict[str, str]
) -> None:
    # carl's private channel's messages never reach ann, whatever operator names them.
    for q in ("vault", "vault from:@carl", "deploy -in:#room", "in:vault", "from:carl"):
        assert "v1" not in await found(client, tokens["ann"], q), q


# --- interpretation, cursors, audit, errors --------------------------------------------------


async def test_interpretation_lists_every_operator_as_typed(
    client: Any, tokens: dict[str, str], db: asyncpg.Connection
) -> None:
    got = await run(client, tokens["ann"], 'Deploy -from:@ben in:#room since:2026-03-02 "sam one"')
    interpretation = got["interpretation"]
    assert interpretation["text"] == 'deploy "sam one"'
    assert [
        (o["name"], o["value"], o["negated"], o["known"]) for o in interpretation["operators"]
    ] == [
        ("from", "@ben", True, True),
        ("in", "#room", False, True),
        ("since", "2026-03-02", False, True),
    ]
    assert interpretation["operators"][0]["matches"] == [
        {"id": await global_id(db, "Member", "ben"), "__typename": "Member"}
    ]
    assert interpretation["operators"][2]["matches"] == []
    assert interpretation["since"].startswith("2026-03-02T00:00:00")
    assert [e["node"]["key"] for e in got["edges"]] == ["r3"]


async def test_cursors_are_bound_to_the_whole_normalized_query(
    client: Any, tokens: dict[str, str]
) -> None:
    ann = tokens["ann"]
    first = await run(client, ann, "deploy in:#room", first=2)
    cursor = first["pageInfo"]["endCursor"]
    assert first["pageInfo"]["hasNextPage"]
    # The same query spelled differently continues.
    again = await run(client, ann, "  deploy   IN:#room ", first=2, after=cursor)
    assert [e["node"]["key"] for e in again["edges"]] == ["r4", "r3"]
    for other, extra in (
        ("deploy in:#infra", {}),
        ("deploy", {}),
        ("deploy in:#room -from:@ben", {}),
        ("deploy in:#room", {"tz": "Europe/Paris"}),
    ):
        error = await error_of(client, ann, other, after=cursor, **extra)
        assert error["extensions"]["code"] == "INVALID_CURSOR", other


async def test_the_audit_records_compiled_filters_never_names(
    client: Any, tokens: dict[str, str], db: asyncpg.Connection
) -> None:
    await run(
        client, tokens["ann"], 'deploy from:"Sam Park" -in:#hush in:#nosuchroom on:2026-03-02'
    )
    row = one(await db.fetchrow("select * from search_audit order by id desc limit 1"))
    stored = json.dumps(dict(row), default=str)
    for name in ("Sam Park", "hush", "nosuchroom", '2026-03-02"', "deploy"):
        assert name not in stored, name
    filters = row["filters"] if isinstance(row["filters"], dict) else json.loads(row["filters"])
    sams = {r["id"] for r in await db.fetch("select id from actors where key in ('sam1', 'sam2')")}
    ops = filters["operators"]
    assert (
        ops[0] == {"name": "from", "negated": False, "ids": sorted(sams)}
        or set(ops[0]["ids"]) == sams
    )
    hush = await db.fetchval("select id from scopes where key = 'hush'")
    assert ops[1] == {"name": "in", "negated": True, "ids": [hush]}
    assert ops[2] == {"name": "in", "negated": False, "ids": []}
    assert ops[3] == {"name": "on", "negated": False}
    assert filters["effective_since"].startswith("2026-03-02T00:00:00")


@pytest.mark.parametrize(
    ("query", "variables", "says"),
    [
        ("deploy from:", {}, "from: needs a value"),
        ('deploy in:""', {}, "in: needs a value"),
        ("deploy -since:2026-03-01", {}, "cannot be negated"),
        ("deploy since:yesterday", {}, "since: takes a date"),
        ("deploy on:2026-02-30", {}, "on: takes a date"),
        ("deploy until:9999-12-31", {}, "until: takes a date"),
        ("deploy", {"tz": "Mars/Olympus"}, "unknown timeZone"),
        ("deploy", {"tz": "../../etc/passwd"}, "timeZone"),
        (" ".join(["from:@ben"] * 17), {}, "more than 16 operators"),
        # Operators count toward the 500 characters, and so does what normalization makes of
        # the text (one U+FDFA is 18 characters): the parser never reads more than it bounds.
        ("from:@ben " * 51, {}, "longer than 500 characters"),
        ("\ufdfa" * 400, {}, "longer than 2000 characters"),
    ],
)
async def test_bad_operators_are_clear_errors(
    client: Any, tokens: dict[str, str], query: str, variables: dict[str, Any], says: str
) -> None:
    error = await error_of(client, tokens["ann"], query, **variables)
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert says in error["message"]
