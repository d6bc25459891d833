"""The demo workspace (`recall serve --demo`): a few months of an engineering team's chat.

Built in code from a seeded random generator, so every run produces the same workspace, and
imported through the same checks and importer as `recall import`. Besides filler it tells a
few stories worth searching for: a MySQL → Postgres migration, an outage (`ERR_CONN_RESET`),
the v2.4.0 release and Q2 planning, in English with some Chinese and Japanese (and one Korean
line); agent replies whose provenance reaches into DMs, a private channel and a private memory;
and one legacy message without source evidence.

`recall serve --demo` prints demo_banner: the demo's tokens (kept across restarts) and where to
paste them.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

import asyncpg

from app.data.readers import reader_for_token
from app.data.tokens import issue_actor_token, issue_connector_token, workspace_id_by_key
from app.errors import UsageError
from app.workspace_import.importer import import_fixture

WORKSPACE = "demo"


@dataclass(frozen=True, slots=True)
class DemoInfo:
    """Keys to print tokens for: a person, that person's agent and their DM with it."""

    workspace_key: str
    member_key: str
    agent_key: str
    agent_dm_key: str
    imported: bool


async def ensure_demo(conn: asyncpg.Connection, progress: TextIO) -> DemoInfo:
    """Import the demo workspace unless it is already there."""
    imported = False
    if await workspace_id_by_key(conn, WORKSPACE) is None:
        try:
            await import_fixture(conn, build_demo_fixture(), progress)
            imported = True
        except UsageError:
            # Another process may have imported it meanwhile; anything else is a real failure.
            if await workspace_id_by_key(conn, WORKSPACE) is None:
                raise
    return DemoInfo(WORKSPACE, "alice", "atlas", "dm-alice-atlas", imported)


async def demo_banner(
    conn: asyncpg.Connection,
    host: str,
    port: int,
    data_dir: Path,
    *,
    external_database: bool = False,
) -> str:
    """`recall serve --demo`'s banner: the demo workspace imported unless it is there, and how
    to reach it — the Messages tab signed in, GraphiQL, MCP, the demo's tokens (kept across
    starts in `data_dir`) and an MCP client's configuration for `recall mcp`."""
    info = await ensure_demo(conn, progress=sys.stderr)
    member, agent, connector = await _demo_tokens(conn, info, data_dir / "demo-tokens.json")
    url = f"http://{host}:{port}/graphql"
    stdio = _stdio_config(agent, data_dir, external_database=external_database)
    return "\n".join(
        [
            "",
            f"Demo workspace '{info.workspace_key}' is ready.",
            f"  Messages tab:  http://{host}:{port}/#token={member}   (signs {info.member_key} in)",
            f"  GraphiQL:      {url}",
            f"  MCP:           http://{host}:{port}/mcp   (docs/mcp.md; the tokens below)",
            f"  member token:  {member}   ({info.member_key})",
            f"  agent token:   {agent}   ({info.agent_key})",
            f"  connector:     {connector}   (applyChanges; docs/changes.md)",
            "",
            "Paste into GraphiQL's Headers tab:",
            f'  {{"Authorization": "Bearer {member}"}}',
            "",
            "Or from a terminal:",
            f"  curl -s {url} -H 'Authorization: Bearer {member}' -H 'Content-Type: application/json' \\",
            '    -d \'{"query": "{ viewer { workspace { key name } member { name } } }"}\'',
            "",
            "An MCP client's configuration for `recall mcp` over stdio, as the agent (docs/mcp.md):",
            f"  {stdio}",
            "",
        ]
    )


async def _demo_tokens(
    conn: asyncpg.Connection, info: DemoInfo, path: Path
) -> tuple[str, str, str]:
    """The demo's member, agent and connector tokens: the ones of the last start while they
    still work (kept in `path`, readable only by this user), else new ones. So restarting
    `recall serve --demo` neither invalidates pasted tokens nor piles up new ones."""
    kept = _read_kept(path)
    wanted = {
        "member": (info.member_key, "member"),
        "agent": (info.agent_key, "agent"),
        "connector": (None, "connector"),
    }
    tokens: dict[str, str | None] = {}
    for name, (actor_key, kind) in wanted.items():
        old = kept.get(name)
        reader = await reader_for_token(conn, old) if isinstance(old, str) else None
        token: str
        if reader is not None and reader.kind == kind and kept.get(f"{name}_key") == actor_key:
            token = str(old)
        else:
            token = (
                await issue_connector_token(conn, info.workspace_key)
                if actor_key is None
                else await issue_actor_token(conn, info.workspace_key, kind, actor_key)
            )
        tokens[name] = token
        tokens[f"{name}_key"] = actor_key
    _write_kept(path, tokens)
    return str(tokens["member"]), str(tokens["agent"]), str(tokens["connector"])


def _read_kept(path: Path) -> dict[str, Any]:
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return kept if isinstance(kept, dict) else {}


def _write_kept(path: Path, tokens: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(tokens, out)
    except OSError as e:
        print(f"recall: could not keep the demo tokens in {path}: {e}", file=sys.stderr)


def _stdio_config(agent_token: str, data_dir: Path, *, external_database: bool) -> str:
    """`recall mcp` as an MCP client's configuration that works from any folder: the command
    and the data location absolute (a desktop client starts it in a folder of its own)."""
    beside = Path(sys.executable).with_name("recall")
    command = str(beside) if beside.exists() else shutil.which("recall") or "recall"
    env = {"RECALL_TOKEN": agent_token}
    if external_database:
        env["DATABASE_URL"] = "the DATABASE_URL recall serve uses"
    else:
        env["RECALL_DATA_DIR"] = str(data_dir.expanduser().resolve())
    server = {"command": command, "args": ["mcp"], "env": env}
    return json.dumps({"mcpServers": {"recall": server}})


_PEOPLE = [
    ("alice", "Alice Chen"),
    ("bob", "Bob Okafor"),
    ("carol", "Carol Diaz"),
    ("dave", "Dave Kim"),
    ("erin", "Erin Walsh"),
    ("frank", "Frank Müller"),
    ("grace", "Grace Liu"),
    ("heidi", "Heidi Tanaka"),
    ("ivan", "Ivan Petrov"),
    ("judy", "Judy Park"),
    # Two different people with the same display name: keys, not names, are identity.
    ("sam-rivera", "Sam"),
    ("sam-osei", "Sam"),
    ("priya", "Priya Shah (Acme)"),
]
_AGENTS = [("atlas", "Atlas", "alice"), ("pip", "Pip", "dave")]
_STAFF = [k for k, _ in _PEOPLE if k != "priya"]
_ENGINEERS = ["alice", "bob", "carol", "dave", "erin", "ivan", "judy", "sam-rivera", "sam-osei"]

# key, kind, visibility, name, members
_SCOPES: list[tuple[str, str, str | None, str | None, list[str]]] = [
    ("general", "channel", "public", "general", [*_STAFF, "atlas", "pip"]),
    ("engineering", "channel", "public", "engineering", [*_ENGINEERS, "atlas"]),
    ("incidents", "channel", "public", "incidents", [*_ENGINEERS, "heidi", "atlas", "pip"]),
    ("random", "channel", "public", "random", _STAFF),
    (
        "db-migration",
        "channel",
        "private",
        "db-migration",
        ["alice", "bob", "carol", "ivan", "atlas"],
    ),
    ("leadership", "channel", "private", "leadership", ["alice", "grace", "heidi"]),
    ("partner-acme", "channel", "shared", "partner-acme", ["alice", "frank", "priya", "atlas"]),
    ("community", "channel", "open", "community", ["alice", "bob", "judy", "sam-rivera"]),
    ("dm-alice-bob", "dm", None, None, ["alice", "bob"]),
    ("dm-carol-dave", "dm", None, None, ["carol", "dave"]),
    ("dm-sams", "dm", None, None, ["sam-rivera", "sam-osei"]),
    ("dm-grace-heidi-alice", "dm", None, None, ["grace", "heidi", "alice"]),
    ("dm-alice-atlas", "dm", None, None, ["alice", "atlas"]),
    ("dm-bob-atlas", "dm", None, None, ["bob", "atlas"]),
    ("dm-dave-pip", "dm", None, None, ["dave", "pip"]),
]
_THREADS = [
    ("t-cutover", "engineering", "pg-cutover"),
    ("t-outage", "incidents", "outage-start"),
    ("t-release", "general", "release"),
    ("t-planning", "leadership", "planning"),
]
_MEMORIES = [
    ("mem-alice-oncall", {"kind": "members", "readers": ["alice"]}),
    ("mem-leadership-budget", {"kind": "members", "readers": ["alice", "grace", "heidi"]}),
    ("mem-conventions", {"kind": "workspace"}),
    ("mem-public-faq", {"kind": "public"}),
]

# The stories, one message a line: key|scope|author|time (2026, UTC)|body.
_STORY = """
welcome-legacy|general|grace|01-05 08:00|Welcome to the new workspace! (imported from the old wiki)
pg-kickoff|engineering|alice|01-12 09:14|Kicking off the MySQL → Postgres migration this quarter
pg-plan|engineering|alice|01-12 09:15|Plan and timeline: https://wiki.example.com/eng/postgres-migration
pg-schema|db-migration|bob|01-14 11:02|Schema diff is done: 214 tables, 3 use ENUM columns we must map
pg-dryrun|db-migration|carol|01-21 15:40|pgloader dry run on the staging snapshot took 47 minutes
pg-replication|db-migration|ivan|01-28 10:05|For the cutover we should use logical replication, not a dump
pg-zh|engineering|grace|02-02 03:30|数据库迁移计划下周五开始，请大家提前准备回滚方案。
oncall-ask|dm-alice-atlas|alice|02-16 08:30|Anything I should know for this week?
oncall-answer|dm-alice-atlas|atlas|02-16 08:30:30|You are on call this week; the checkout dashboards are pinned.
outage-start|incidents|erin|02-17 14:06|Checkout API fails with ERR_CONN_RESET for ~30% of requests since 14:02
outage-status|t-outage|alice|02-17 14:09|Status page: https://status.example.com/incidents/2026-02-17-checkout
outage-cause|t-outage|carol|02-17 14:21|Looks like the pgbouncer pool is exhausted after the pool_size change
outage-ja|t-outage|heidi|02-17 14:25|東京リージョンでも同じエラーが出ています。
outage-fix|t-outage|carol|02-17 14:48|Rolled back pool_size; the ERR_CONN_RESET rate is back under 0.1%
outage-ja-2|t-outage|heidi|02-17 15:02|障害は解消されました。
outage-pm|incidents|erin|02-19 10:00|Postmortem: https://wiki.example.com/postmortems/2026-02-17-err-conn-reset
outage-ask|dm-bob-atlas|bob|02-20 09:10|What caused Tuesday's checkout errors?
outage-answer|dm-bob-atlas|atlas|02-20 09:10:30|An exhausted pgbouncer pool caused ERR_CONN_RESET; a rollback fixed it.
pg-rollback|dm-alice-bob|bob|02-26 17:20|Cutover rollback plan: flip DNS back to the MySQL primary within 10 minutes
pg-ask|dm-alice-atlas|alice|03-05 08:55|Atlas, what did we decide about rolling back the Postgres cutover?
pg-answer|dm-alice-atlas|atlas|03-05 08:55:40|DNS flips back to MySQL within 10 minutes; replication keeps it warm.
pg-cutover|engineering|alice|03-06 22:10|Postgres cutover is done ✅ all traffic is on the new cluster
pg-cutover-1|t-cutover|bob|03-06 22:12|p95 latency on the orders endpoint went from 180ms to 95ms
pg-cutover-2|t-cutover|ivan|03-06 22:30|Replication from MySQL is stopped; we keep the snapshot for 30 days
pg-cutover-zh|t-cutover|grace|03-07 01:15|我们把数据库迁移到 Postgres 之后，查询速度快了很多。
release|general|judy|03-20 16:00|Release v2.4.0 is out 🎉 https://github.com/example/app/releases/tag/v2.4.0
release-ko|t-release|judy|03-20 16:02|배포가 완료되었습니다
release-ja|t-release|heidi|03-20 16:30|v2.4.0 のリリースおめでとうございます！
release-sam|t-release|sam-rivera|03-20 16:45|Nice work everyone, the new search filters are great
release-sam-2|t-release|sam-osei|03-20 16:47|Agreed, and the export bug from v2.3 is finally gone
release-ask|dm-dave-pip|dave|03-21 09:00|Pip, summarize the v2.4.0 release for the customer newsletter
release-answer|dm-dave-pip|pip|03-21 09:00:40|v2.4.0 (March 20): new search filters and the v2.3 export fix.
planning|leadership|grace|04-01 10:00|Q2 planning: search quality, SSO for Acme, and cutting infra cost 15%
planning-1|t-planning|heidi|04-01 10:20|Infra cost: the Postgres move already saves us the MySQL licences
planning-2|t-planning|alice|04-01 10:35|Two more engineers are approved if we hit the Q2 SSO milestone
planning-answer|dm-alice-atlas|atlas|04-02 08:00|Q2: search, Acme SSO, infra cost; two hires hinge on SSO.
acme-sso|partner-acme|priya|04-08 15:00|Our IdP metadata: https://idp.acme.example.com/metadata.xml
community-q|community|sam-rivera|04-10 12:00|Thanks for the report! Tracking it in https://github.com/example/app/issues/4121
"""
# Agent replies and what they were built from (a DM, a private channel, private memories), and
# the one legacy message without source evidence.
_EXTRAS: dict[str, dict[str, Any]] = {
    "welcome-legacy": {"evidence": False},
    "oncall-answer": {"memorySources": ["mem-alice-oncall"]},
    "outage-answer": {"sources": ["outage-start", "outage-cause", "outage-fix"]},
    "pg-answer": {"sources": ["pg-rollback", "pg-replication"]},
    "release-answer": {"sources": ["release", "release-sam", "release-sam-2"]},
    "planning-answer": {
        "sources": ["planning", "planning-2"],
        "memorySources": ["mem-leadership-budget"],
    },
}

_START = datetime(2026, 1, 5, tzinfo=UTC)
_DAYS = 115  # to late April

_FILLER: dict[str, list[str]] = {
    "general": [
        "Reminder: all-hands on {day} at {time}",
        "Lunch order for {day}: {food}?",
        "Welcome {name} to the team! 👋",
        "The office is closed on {day} for maintenance",
        "Who has the projector adapter from room {n}?",
        "Next week's demo day is on {day}, sign up in the sheet",
    ],
    "engineering": [
        "PR #{n} ({topic}) is ready for review",
        "CI is red on main again, {test} is flaky",
        "Bumped {dep} to {ver}",
        "Anyone know why {service} latency spiked at {time}?",
        "Deploying {service} {ver} to staging",
        "The {table} index rebuild finished in {n} minutes",
        "Can someone pair with me on the {topic} refactor?",
        "{service} now logs request ids, grep for them in Kibana",
    ],
    "incidents": [
        "Pager: {service} p95 latency above {n}ms",
        "Acked, looking into {service}",
        "False alarm, the {service} health check timed out during a deploy",
        "Disk on {replica} is at {n}%, rotating logs",
        "Resolved: {service} error rate is back to normal",
    ],
    "random": [
        "Anyone up for {game} on Friday?",
        "Coffee machine on the third floor is fixed ☕",
        "Photo from the offsite 📷",
        "Book club this month: {book}",
        "Happy birthday {name}! 🎂",
    ],
    "db-migration": [
        "Migrated {table} ({n}k rows), checksums match",
        "Replication lag on {replica} is {n}s",
        "Found a collation difference in {table}, fixing the sort order",
        "Rehearsal #{n} of the cutover went fine",
        "{table} has a trigger we forgot about, porting it to plpgsql",
    ],
    "leadership": [
        "Hiring update: {n} onsites this week",
        "Budget review moved to {day}",
        "Board deck draft is in the shared folder",
        "Let's revisit the on-call rotation in the next offsite",
    ],
    "partner-acme": [
        "The SSO integration test passed on our side",
        "Could you share a sample webhook payload?",
        "Our security review is scheduled for {day}",
        "Rate limits for the Acme tenant are raised to {n} rps",
    ],
    "community": [
        "Thanks for trying the beta! Feedback welcome here",
        "The docs for {topic} are updated",
        "Known issue: {topic} fails on Safari 16, fix coming in {ver}",
    ],
    "dm": [
        "Got a minute?",
        "Thanks!",
        "Can you look at PR #{n} when you have time?",
        "Running 5 min late",
        "Sure, {day} works",
        "Let's sync after standup about {topic}",
    ],
    "agent": [
        "On it.",
        "Here is the link you asked for: https://wiki.example.com/eng/{topic}",
        "I have added that to your notes.",
    ],
    "cjk": [
        "明天的站会改到十点。",
        "这个问题我来看一下。",
        "了解しました、確認します。",
        "今日はリモートで働きます。",
        "代码审查已经完成了。",
    ],
}
_SLOTS: dict[str, list[str]] = {
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
    "time": ["10:00", "11:30", "14:00", "16:30"],
    "food": ["tacos", "ramen", "pizza", "bibimbap", "falafel"],
    "name": [n for _, n in _PEOPLE[:10]],
    "n": [str(n) for n in (3, 7, 12, 40, 85, 120, 250, 512, 987, 1204)],
    "topic": ["search filters", "billing", "auth tokens", "rate limiting", "exports", "sso"],
    "test": ["test_checkout_flow", "test_export_csv", "test_login_redirect"],
    "dep": ["asyncpg", "pydantic", "react", "uvicorn", "pgbouncer"],
    "ver": ["v2.3.1", "v2.3.2", "v2.4.0-rc1", "v2.4.1"],
    "service": ["checkout", "search", "auth", "billing", "notifications"],
    "table": ["orders", "invoices", "users", "events", "line_items"],
    "replica": ["db-replica-1", "db-replica-2", "pg-eu-1"],
    "game": ["table tennis", "board games", "karaoke"],
    "book": ["Designing Data-Intensive Applications", "The Phoenix Project"],
}
_SLOT = re.compile(r"\{(\w+)\}")
_WEIGHTS = {
    "general": 16, "engineering": 24, "incidents": 7, "random": 9, "db-migration": 8,
    "leadership": 4, "partner-acme": 4, "community": 4, "dm-alice-bob": 5, "dm-carol-dave": 4,
    "dm-sams": 3, "dm-grace-heidi-alice": 3, "dm-alice-atlas": 4, "dm-bob-atlas": 3,
    "dm-dave-pip": 2,
}  # fmt: skip


def build_demo_fixture(messages: int = 3000, seed: int = 20260105) -> dict[str, Any]:
    """The demo workspace as a fixture dict (docs/fixtures.md), `messages` long in total."""
    rng = random.Random(seed)
    speakers_of = {key: members for key, _, _, _, members in _SCOPES}
    agents = {key for key, _, _ in _AGENTS}
    out = [_story_message(line) for line in _STORY.strip().splitlines()]
    for message in out:
        message.update(_EXTRAS.get(message["key"], {}))
    scopes = list(_WEIGHTS)
    weights = list(_WEIGHTS.values())
    for n in range(max(0, messages - len(out))):
        scope = rng.choices(scopes, weights)[0]
        author = rng.choice(speakers_of[scope])
        pool = "agent" if author in agents else "dm" if scope.startswith("dm-") else scope
        if pool != "agent" and rng.random() < 0.03:
            pool = "cjk"
        body = _fill(rng, rng.choice(_FILLER[pool]))
        when = _START + timedelta(
            days=rng.randrange(_DAYS), seconds=rng.randrange(8 * 3600, 19 * 3600)
        )
        out.append(
            {
                "key": f"m{n + 1:06d}",
                "scope": scope,
                "author": author,
                "at": _iso(when),
                "body": body,
            }
        )
    out.sort(key=lambda m: m["at"])
    return {
        "workspace": {"key": WORKSPACE, "name": "Demo Co"},
        "namespace": "slack:demo",
        "members": [{"key": k, "name": n} for k, n in _PEOPLE],
        "agents": [{"key": k, "name": n, "owner": o} for k, n, o in _AGENTS],
        "scopes": [
            {"key": k, "kind": kind, **({"visibility": v} if v else {}), **({"name": n} if n else {}),
             "members": list(m)}
            for k, kind, v, n, m in _SCOPES
        ] + [{"key": k, "kind": "thread", "parent": p, "root": r} for k, p, r in _THREADS],
        "memories": [{"key": k, "audience": a} for k, a in _MEMORIES],
        "messages": out,
    }  # fmt: skip


def _story_message(line: str) -> dict[str, Any]:
    key, scope, author, when, body = line.split("|")
    at = datetime.fromisoformat(f"2026-{when.replace(' ', 'T')}").replace(tzinfo=UTC)
    return {"key": key, "scope": scope, "author": author, "at": _iso(at), "body": body}


def _fill(rng: random.Random, template: str) -> str:
    return template.format_map({slot: rng.choice(_SLOTS[slot]) for slot in _SLOT.findall(template)})


def _iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")
