"""The GraphQL fuzz run: schemathesis against a real `recall serve`, every token kind in turn.

    python -m bench.fuzz --requests 1000
    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres python -m bench.fuzz

Creates `recall_fuzz_<pid>` on DATABASE_URL's server (or the embedded one), migrates it, loads
the demo workspace (app.demo) and mints a member (alice), an agent (atlas), a turn (atlas in its
DM with alice) and a connector token. Starts `recall serve` as a subprocess on a free port,
loads the schema by introspection (schemathesis.graphql.from_url) and, for each token kind, for
every root field (queries and mutations), draws positive and negative cases (hypothesis-graphql
through schemathesis) and POSTs them with `Authorization: Bearer …` and
`Accept: application/graphql-response+json`, until at least --requests requests were sent or
--max-seconds ran out. IDs, strings, ints and times are drawn from real values of the demo
workspace mixed with hostile ones (ids of other types, huge or negative keys, sealed cursors
with odd payloads, times at the ends of the calendar), so cases reach the resolvers, not only
the validator.

Counts responses by HTTP status and by `errors[].extensions.code`. Exits 1 on any 5xx, any
INTERNAL_SERVER_ERROR, a response that is not JSON, or fewer requests than asked for, printing
each offending request (query and variables) with the server's log lines for it (matched by
X-Request-Id). Progress on stderr; a JSON summary on stdout. The database is dropped at the end
unless --keep.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx

from app.db import connect, resolve_database_url
from app.message_search.opaque import Sealer, seal
from app.request.ids import encode_id
from app.settings import Settings
from bench.cluster import with_database
from bench.harness import free_port

_RECALL = str(Path(sys.executable).with_name("recall"))
ACCEPT = "application/graphql-response+json"
TOKEN_KINDS = ("member", "agent", "turn", "connector")


def _say(line: str) -> None:
    print(f"fuzz: {line}", file=sys.stderr, flush=True)


@dataclass
class Seeds:
    """Real values of the demo workspace for the generators to mix in."""

    tokens: dict[str, str]
    ids: list[str]
    words: list[str]
    keys: list[str]
    # The installation's cursor key and whom each token's cursors are sealed for: the fuzz
    # reseals real cursors with changed payloads, so they pass authentication and reach the
    # checks behind it (app.message_search.opaque), as only someone holding the key could.
    cursor_key: bytes = b""
    sealed_for: dict[str, str] = field(default_factory=dict)
    # Real cursors' payloads, with whom they were sealed for.
    cursors: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


@dataclass
class Failure:
    token: str
    operation: str
    status: int
    codes: list[str]
    request_id: str
    query: str
    variables: dict[str, Any]
    messages: list[str]
    server_log: list[str] = field(default_factory=list)


@dataclass
class Tally:
    requests: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    codes: Counter[str] = field(default_factory=Counter)
    by_token: Counter[str] = field(default_factory=Counter)
    by_operation: Counter[str] = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    reported: float = field(default_factory=time.monotonic)
    # --cases FILE: every request and its answer's status and codes, one JSON object a line.
    cases: Any = None


# --- the database -----------------------------------------------------------------------


async def _prepare(dsn: str) -> Seeds:
    from app.data import secrets
    from app.data.readers import reader_for_token
    from app.data.tokens import issue_actor_token, issue_connector_token
    from app.demo import ensure_demo
    from app.history_search.turns import start_turn_by_keys
    from app.migrate import migrate

    conn = await connect(dsn)
    try:
        await migrate(conn)
        info = await ensure_demo(conn, progress=sys.stderr)
        ws = info.workspace_key
        tokens = {
            "member": await issue_actor_token(conn, ws, "member", info.member_key),
            "agent": await issue_actor_token(conn, ws, "agent", info.agent_key),
            "turn": await start_turn_by_keys(
                conn,
                workspace_key=ws,
                agent_key=info.agent_key,
                scope_key=info.agent_dm_key,
                requester_key=info.member_key,
                trigger_key=None,
                window=30,
            ),
            "connector": await issue_connector_token(conn, ws),
        }
        ids: list[str] = []
        for type_name, sql in (
            ("Workspace", "select id from workspaces"),
            ("Scope", "select id from scopes order by id"),
            ("Member", "select id from actors where kind = 'member' order by id"),
            ("Agent", "select id from actors where kind = 'agent' order by id"),
            ("Message", "select id from messages order by id limit 40"),
            ("Turn", "select id from turns"),
        ):
            ids += [encode_id(type_name, r["id"]) for r in await conn.fetch(sql)]
        keys = [
            r["key"]
            for r in await conn.fetch(
                "(select key from actors) union all (select key from scopes)"
                " union all (select key from messages order by id desc limit 30)"
            )
        ]
        cursor_key = await secrets.cursor_key(conn)
        sealed_for = {}
        for kind in ("member", "turn"):
            reader = await reader_for_token(conn, tokens[kind])
            assert reader is not None
            sealed_for[kind] = reader.cursor_context
    finally:
        await conn.close()
    words = ["postgres", "migration", "ERR_CONN_RESET", "v2.4.0", '"cache stampede"', "-mysql"]
    return Seeds(tokens, ids, words, keys, cursor_key, sealed_for)


async def _create(server_dsn: str, name: str) -> None:
    admin = await asyncpg.connect(server_dsn)
    try:
        await admin.execute(f'drop database if exists "{name}" with (force)')
        await admin.execute(f'create database "{name}"')
    finally:
        await admin.close()


async def _drop(server_dsn: str, name: str) -> None:
    admin = await asyncpg.connect(server_dsn)
    try:
        await admin.execute(f'drop database if exists "{name}" with (force)')
    finally:
        await admin.close()


# --- the server ---------------------------------------------------------------------------


def _serve(dsn: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DATABASE_URL": dsn, "RECALL_LOG_FORMAT": "json"}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [_RECALL, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=out,
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        if proc.poll() is not None:
            raise RuntimeError(f"recall serve exited during startup: {log.read_text()[-800:]}")
        time.sleep(0.1)
    proc.terminate()
    raise RuntimeError("recall serve did not start in 30 s")


def _server_errors(log: Path) -> dict[str, list[str]]:
    """The server's error lines by request id (its JSON log)."""
    found: dict[str, list[str]] = {}
    for line in log.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("level") in ("error", "critical"):
            key = str(record.get("request_id"))
            text = record.get("message", "")
            if record.get("exception"):
                text += "\n" + str(record["exception"])
            found.setdefault(key, []).append(text)
    return found


# --- the generators ------------------------------------------------------------------------


def _weighted(*choices: tuple[int, Any]) -> Any:
    """One of the strategies, each as likely as its weight."""
    from hypothesis import strategies as st

    pool = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.integers(0, len(pool) - 1).flatmap(lambda i: pool[i])


def _register_scalars(seeds: Seeds) -> None:
    """Value strategies for the schema's scalars (schemathesis.graphql.scalar overrides the
    built-in ID, String and Int too): mostly real or well-formed values, so that a case with
    several arguments still often passes validation and reaches a resolver; hostile ones the
    rest of the time."""
    import schemathesis
    from hypothesis import strategies as st
    from schemathesis.graphql import nodes

    type_names = ["Workspace", "Scope", "Member", "Agent", "Message", "Turn", "Nope"]
    keys = st.one_of(
        st.integers(-3, 5000), st.sampled_from([0, 2**31, 2**63 - 1, 2**63, 2**64, -(2**63)])
    )
    crafted_ids = st.builds(encode_id, st.sampled_from(type_names), keys)
    raw_ids = st.text(max_size=70).map(
        lambda s: base64.urlsafe_b64encode(s.encode()).decode().rstrip("=")
    )
    ids = _weighted(
        (6, st.sampled_from(seeds.ids).map(nodes.String)),
        (2, crafted_ids.map(nodes.String)),
        (1, st.one_of(raw_ids, st.text(max_size=80)).map(nodes.String)),
        (1, st.integers(-(2**31), 2**31 - 1).map(nodes.Int)),
    )
    json_values = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=3), children, max_size=4)
        ),
        max_leaves=8,
    )
    sealer = Sealer(seeds.cursor_key)

    def sealed(seed: tuple[str, dict[str, Any]], **changed: Any) -> str:
        context, payload = seed
        return sealer.seal({**payload, **changed}, context)

    # Real cursors with one value replaced, sealed again for their reader: their binding
    # still matches the same search, so the position checks behind authentication run.
    mutated = st.builds(
        lambda seed, key, value: sealed(seed, **{key: value}),
        st.sampled_from(seeds.cursors),
        st.sampled_from(sorted({k for _, c in seeds.cursors for k in c})),
        json_values,
    )
    positions = st.builds(
        lambda seed, p: sealed(seed, p=p),
        st.sampled_from([s for s in seeds.cursors if "p" in s[1]] or seeds.cursors),
        st.lists(st.one_of(st.none(), st.integers(), st.floats(), st.booleans()), max_size=5),
    )
    cursors = _weighted(
        (2, st.sampled_from(seeds.cursors).map(sealed)),
        (3, mutated),
        (2, positions),
        # Payloads sealed for nobody in particular, and the plain envelope of old cursors.
        (
            1,
            st.dictionaries(st.text(max_size=3), json_values, max_size=5).map(
                lambda payload: sealer.seal(payload, "nobody")
            ),
        ),
        (1, st.dictionaries(st.text(max_size=3), json_values, max_size=5).map(seal)),
    )
    strings = _weighted(
        (4, st.sampled_from(seeds.words)),
        (2, st.lists(st.sampled_from(seeds.words), min_size=1, max_size=4).map(" ".join)),
        (3, st.sampled_from(seeds.keys)),
        (2, cursors),
        (3, st.text(max_size=60)),
        (1, st.text(min_size=490, max_size=520)),
    ).map(nodes.String)
    ints = _weighted(
        (6, st.integers(-1, 101)),
        (1, st.integers(-(2**31), 2**31 - 1)),
        (2, st.sampled_from([0, 1, 8, 20, 100])),
    ).map(nodes.Int)
    offsets = st.integers(-14 * 60, 14 * 60).map(
        lambda m: ("+" if m >= 0 else "-") + f"{abs(m) // 60:02d}:{abs(m) % 60:02d}"
    )
    instants = st.builds(
        lambda d, zone: d.isoformat() + zone,
        st.datetimes(),
        st.one_of(st.just(""), st.just("Z"), offsets),
    )
    times = _weighted(
        (6, instants),
        (
            2,
            st.sampled_from(
                [
                    "0001-01-01T00:00:00+14:00",
                    "0001-01-01T00:00:00",
                    "9999-12-31T23:59:59.999999-14:00",
                    "9999-12-31T23:59:59.999999",
                    "2026-01-05T10:00:00Z",
                ]
            ),
        ),
        (1, st.one_of(st.sampled_from(["2026-13-01", "now", "", "24:00"]), st.text(max_size=30))),
    ).map(nodes.String)
    schemathesis.graphql.scalar("ID", ids)
    schemathesis.graphql.scalar("String", strings)
    schemathesis.graphql.scalar("Int", ints)
    schemathesis.graphql.scalar("DateTime", times)


def _harvest_cursors(url: str, seeds: Seeds) -> list[tuple[str, dict[str, Any]]]:
    """Real cursors of each kind (messageSearch, historySearch, Scope.messages), opened with
    the installation's key, with whom each was sealed for."""
    tokens = seeds.tokens
    sealer = Sealer(seeds.cursor_key)

    asks = [
        ("member", '{ messageSearch(query: "postgres", first: 2) { pageInfo { endCursor } } }'),
        ("turn", '{ historySearch(query: "postgres", first: 2) { pageInfo { endCursor } } }'),
        (
            "member",
            "{ viewer { workspace { scopes { messages(first: 2) { pageInfo { endCursor } } } } } }",
        ),
    ]
    found: list[tuple[str, dict[str, Any]]] = []
    for kind, query in asks:
        headers = {"Authorization": f"Bearer {tokens[kind]}", "Accept": ACCEPT}
        body = httpx.post(url, json={"query": query}, headers=headers, timeout=30).json()
        context = seeds.sealed_for[kind]
        for text in re.findall(r'"endCursor": ?"([^"]+)"', json.dumps(body)):
            found.append((context, sealer.open(text, context)))
    if not found:
        raise RuntimeError("no cursor to start from: the demo searches returned nothing")
    return found[:12]


# --- the run --------------------------------------------------------------------------------


def _fuzz(url: str, seeds: Seeds, args: argparse.Namespace, tally: Tally) -> bool:
    """Sends the cases; False when --max-seconds ran out first."""
    import requests
    import schemathesis
    from hypothesis import HealthCheck, Phase, Verbosity, given
    from hypothesis import seed as hypothesis_seed
    from hypothesis import settings as hypothesis_settings
    from hypothesis.strategies import SearchStrategy
    from schemathesis import GenerationMode
    from schemathesis.core.result import Err

    seeds.cursors = _harvest_cursors(url, seeds)
    _register_scalars(seeds)
    headers = {"Authorization": f"Bearer {seeds.tokens['member']}", "Accept": ACCEPT}
    schema = schemathesis.graphql.from_url(url, headers=headers, timeout=30)
    operations = []
    for result in schema.get_all_operations():
        if isinstance(result, Err):
            raise result.err()
        operations.append(result.ok())
    modes = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    combos = [(kind, op, mode) for kind in TOKEN_KINDS for op in operations for mode in modes]
    _say(
        f"{len(operations)} root fields x {len(TOKEN_KINDS)} tokens x {len(modes)} modes; "
        f"at least {args.requests} requests"
    )
    deadline = time.monotonic() + args.max_seconds
    session = requests.Session()
    round_no = 0
    while tally.requests < args.requests:
        if time.monotonic() >= deadline:
            return False
        per_combo = max(1, math.ceil((args.requests - tally.requests) / len(combos)))
        for index, (kind, operation, mode) in enumerate(combos):
            send = _sender(url, session, seeds.tokens[kind], kind, operation.label, deadline, tally)
            cases: SearchStrategy[Any] = operation.as_strategy(generation_mode=mode)
            test = given(cases)(send)
            test = hypothesis_seed(args.seed * 100_003 + round_no * 1_009 + index)(test)
            test = hypothesis_settings(
                max_examples=per_combo,
                database=None,
                deadline=None,
                derandomize=False,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
                verbosity=Verbosity.quiet,
            )(test)
            test()
        round_no += 1
    return True


def _sender(
    url: str,
    session: Any,
    token: str,
    kind: str,
    label: str,
    deadline: float,
    tally: Tally,
) -> Callable[[Any], None]:
    """The test body for one token kind and root field: send the case, count the answer."""

    def send(case: Any) -> None:
        if time.monotonic() >= deadline:
            return
        tally.requests += 1
        request_id = f"fuzz-{tally.requests}"
        response = case.call(
            base_url=url,
            session=session,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": ACCEPT,
                "X-Request-Id": request_id,
            },
            timeout=30,
        )
        _count(tally, kind, label, request_id, case, response)
        if time.monotonic() - tally.reported > 5:
            tally.reported = time.monotonic()
            _say(
                f"{tally.requests} requests; statuses {dict(tally.statuses)};"
                f" {len(tally.failures)} failing"
            )

    return send


def _count(tally: Tally, kind: str, label: str, request_id: str, case: Any, response: Any) -> None:
    status = int(response.status_code)
    tally.statuses[str(status)] += 1
    tally.by_token[kind] += 1
    tally.by_operation[label] += 1
    codes: list[str] = []
    messages: list[str] = []
    try:
        body = json.loads(response.content)
    except ValueError:
        body = None
    if isinstance(body, dict):
        for error in body.get("errors") or []:
            extensions = error.get("extensions") or {} if isinstance(error, dict) else {}
            codes.append(str(extensions.get("code", "(no code)")))
            messages.append(str(error.get("message", "")) if isinstance(error, dict) else "")
    else:
        codes.append("(not json)")
    if not codes:
        tally.codes["(none)"] += 1
    for code in codes:
        tally.codes[code] += 1
    query = case.body if isinstance(case.body, str) else repr(case.body)
    if tally.cases is not None:
        line = {"id": request_id, "token": kind, "operation": label, "status": status}
        tally.cases.write(
            json.dumps({**line, "codes": codes, "messages": messages, "query": query}) + "\n"
        )
    if status >= 500 or "INTERNAL_SERVER_ERROR" in codes or "(not json)" in codes:
        tally.failures.append(Failure(kind, label, status, codes, request_id, query, {}, messages))


def run(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    started = time.perf_counter()
    settings = Settings()
    server_dsn = args.database_url or resolve_database_url(settings)
    name = f"recall_fuzz_{os.getpid()}"
    dsn = with_database(server_dsn, name)
    asyncio.run(_create(server_dsn, name))
    tally = Tally()
    if args.cases:
        tally.cases = open(args.cases, "w")  # noqa: SIM115 - closed after the run
    completed = False
    with tempfile.TemporaryDirectory(prefix="recall-fuzz-") as tmp:
        log = Path(args.server_log) if args.server_log else Path(tmp) / "serve.log"
        try:
            seeds = asyncio.run(_prepare(dsn))
            port = free_port()
            serve = _serve(dsn, port, log)
            _say(f"recall serve on 127.0.0.1:{port} (database {name})")
            fuzz_started = time.perf_counter()
            try:
                completed = _fuzz(f"http://127.0.0.1:{port}/graphql", seeds, args, tally)
            finally:
                serve.terminate()
                serve.wait(timeout=30)
            fuzz_seconds = time.perf_counter() - fuzz_started
            logged = _server_errors(log)
            for failure in tally.failures:
                failure.server_log = logged.get(failure.request_id, [])
        finally:
            if args.keep:
                _say(f"kept database {name}")
            else:
                asyncio.run(_drop(server_dsn, name))
    if tally.cases is not None:
        tally.cases.close()
    summary: dict[str, Any] = {
        "requests": tally.requests,
        "asked": args.requests,
        "completed": completed,
        "seed": args.seed,
        "server": urlsplit(server_dsn).netloc.split("@")[-1] or "embedded",
        "seconds": round(time.perf_counter() - started, 1),
        "fuzz_seconds": round(fuzz_seconds, 1),
        "statuses": dict(sorted(tally.statuses.items())),
        "codes": dict(tally.codes.most_common()),
        "by_token": dict(tally.by_token),
        "by_operation": dict(sorted(tally.by_operation.items())),
        "server_error_lines": sum(len(v) for v in logged.values()),
        "failures": len(tally.failures),
    }
    for failure in tally.failures:
        print(
            f"\nFAIL {failure.status} {failure.codes} token={failure.token}"
            f" {failure.operation} ({failure.request_id})\n  messages: {failure.messages}\n"
            f"  query: {failure.query}\n  variables: {json.dumps(failure.variables)}",
            file=sys.stderr,
        )
        for line in failure.server_log:
            print("  server: " + line.replace("\n", "\n    "), file=sys.stderr)
    failed = bool(tally.failures) or not completed
    if not completed:
        _say(f"time ran out after {tally.requests} of {args.requests} requests")
    return summary, 1 if failed else 0


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.fuzz", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--requests", type=int, default=1000, help="at least this many (1000)")
    parser.add_argument("--seed", type=int, default=1, help="the generators' seed (1)")
    parser.add_argument(
        "--max-seconds", type=float, default=300, help="stop sending after this long (300)"
    )
    parser.add_argument("--database-url", help="the server to create the database on")
    parser.add_argument("--server-log", help="keep recall serve's log in this file")
    parser.add_argument("--cases", help="write every request and its outcome (NDJSON) here")
    parser.add_argument("--keep", action="store_true", help="keep the database")
    args = parser.parse_args()
    summary, code = run(args)
    print(json.dumps(summary, indent=2))
    sys.exit(code)


if __name__ == "__main__":
    main()
