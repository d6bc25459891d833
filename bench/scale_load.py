"""The load of bench.scaleout and bench.scale_throughput: generated workspaces imported, their
tenants' tokens, and messageSearch, historySearch and connector batches (applyChanges with
known keys) against them over HTTP, each request classified as it answers.

A request is `ok` (HTTP 200, no errors, every change of a batch applied or unchanged),
`unavailable` (HTTP 503 with SERVICE_UNAVAILABLE or SEARCH_UNAVAILABLE, no data beside it,
within the request budget, for a workspace whose worker the run stopped on purpose) or a
`failure` (anything else: a 500, an unexpected error, a partial page, a slow 503, a 503 for a
workspace whose node is up). A batch that did not answer `ok` is kept to be sent again once
the cluster is whole, as a connector retries: afterwards every key must be there exactly once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from app.request.ids import encode_id
from bench.generate import generate_file
from bench.harness import KeepAlive, import_file, pct, say, start_turn

KINDS = ("messageSearch", "historySearch", "applyChanges")
SEARCH = """
query($q: String!, $after: String) {
  messageSearch(query: $q, first: 20, after: $after) {
    edges { node { key } } pageInfo { endCursor hasNextPage }
  }
}"""
HISTORY = "query($q: String!) { historySearch(query: $q, first: 8) { status count } }"
APPLY = (
    "mutation($changes: [ChangeInput!]!) { applyChanges(changes: $changes) { applied unchanged } }"
)
UNAVAILABLE = {"SERVICE_UNAVAILABLE", "SEARCH_UNAVAILABLE"}
_EPOCH = 1_798_761_600  # 2027-01-01T00:00:00Z: after every fixture message


@dataclass
class Tenant:
    key: str
    id: int
    messages: int
    member: str
    connector: str
    turns: list[str]
    channels: list[tuple[str, list[str]]]
    terms: list[str]


@dataclass
class Sample:
    phase: str
    kind: str
    tenant: str
    ms: float
    outcome: str  # ok | unavailable | failure
    detail: str = ""


@dataclass
class Batch:
    tenant: Tenant
    changes: list[dict[str, Any]]

    @property
    def keys(self) -> list[str]:
        return [c["postMessage"]["key"] for c in self.changes]


@dataclass
class Load:
    port: int
    tenants: list[Tenant]
    budget_s: float
    run_id: str
    batch_size: int = 10
    phase: str = "before"
    # Workspaces whose node is stopped on purpose: 503s for them are expected.
    down: set[str] = field(default_factory=set)
    samples: list[Sample] = field(default_factory=list)
    acked: list[Batch] = field(default_factory=list)
    unacked: list[Batch] = field(default_factory=list)
    posted: int = 0
    # When each phase began (time.perf_counter()), and "end" when the load stopped.
    phase_started: dict[str, float] = field(default_factory=dict)

    def _batch(self, tenant: Tenant) -> Batch:
        changes = []
        for _ in range(self.batch_size):
            n = self.posted
            self.posted += 1
            scope, people = tenant.channels[n % len(tenant.channels)]
            changes.append(
                {
                    "postMessage": {
                        "key": f"scale-{self.run_id}-{n:07d}",
                        "scope": scope,
                        "author": people[n % len(people)],
                        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(_EPOCH + n)),
                        # No marker term: the searches' pages (and their cursors) stay the
                        # fixture's, so a cursor taken before a move must give the same page.
                        "body": f"scaleout connector change {n}",
                    }
                }
            )
        return Batch(tenant, changes)

    async def client(self, i: int, stop: asyncio.Event) -> None:
        http = KeepAlive(self.port)
        step = 0
        try:
            while not stop.is_set():
                tenant = self.tenants[(i + step) % len(self.tenants)]
                kind = KINDS[(i * 7 + step) % len(KINDS)]
                await self.one(http, kind, tenant, step)
                step += 1
        finally:
            await http.close()

    async def one(self, http: KeepAlive, kind: str, tenant: Tenant, step: int) -> None:
        batch: Batch | None = None
        variables: dict[str, Any]
        term = tenant.terms[step % len(tenant.terms)]
        if kind == "messageSearch":
            token, query, variables = tenant.member, SEARCH, {"q": term}
        elif kind == "historySearch":
            token = tenant.turns[step % len(tenant.turns)]
            query, variables = HISTORY, {"q": term}
        else:
            batch = self._batch(tenant)
            token, query, variables = tenant.connector, APPLY, {"changes": batch.changes}
        phase = self.phase
        # Expected to be unavailable if its node was down when the request was sent or when
        # it answered (a stop or a start in between).
        was_down = tenant.key in self.down
        payload = json.dumps({"query": query, "variables": variables}).encode()
        started = time.perf_counter()
        try:
            status, _, raw = await http.post(payload, token)
            body = json.loads(raw)
        except Exception as e:  # a dropped connection, a reset: a failure of the gateway
            await http.close()
            status, body = 0, {"transport": f"{type(e).__name__}: {e}"}
        ms = (time.perf_counter() - started) * 1000
        down = was_down or tenant.key in self.down
        outcome, detail = self.classify(status, body, tenant, ms, batch, down)
        self.samples.append(Sample(phase, kind, tenant.key, round(ms, 2), outcome, detail))
        if batch is not None:
            (self.acked if outcome == "ok" else self.unacked).append(batch)

    def classify(
        self,
        status: int,
        body: dict[str, Any],
        tenant: Tenant,
        ms: float,
        batch: Batch | None,
        down: bool,
    ) -> tuple[str, str]:
        errors = body.get("errors") or []
        codes = {(e.get("extensions") or {}).get("code") for e in errors}
        if status == 200 and not errors:
            if batch is not None:
                got = body["data"]["applyChanges"]
                if got["applied"] + got["unchanged"] != len(batch.changes):
                    return "failure", f"applied {got}"
            return "ok", ""
        detail = f"HTTP {status} {sorted(str(c) for c in codes)} {json.dumps(body)[:200]}"
        data = body.get("data") or {}
        partial = any(v is not None for v in data.values())
        if (
            status == 503
            and codes
            and codes <= UNAVAILABLE
            and not partial
            and ms <= self.budget_s * 1000
            and down
        ):
            return "unavailable", detail
        return "failure", detail

    async def retry_unacked(self) -> int:
        """Send every batch that did not answer ok again (the cluster is whole by now); a
        retry that fails again is a failure of the run. How many batches were retried."""
        http = KeepAlive(self.port)
        retried = self.unacked
        self.unacked = []
        try:
            for b in retried:
                payload = json.dumps({"query": APPLY, "variables": {"changes": b.changes}})
                status, _, raw = await http.post(payload.encode(), b.tenant.connector)
                body = json.loads(raw)
                outcome, detail = self.classify(status, body, b.tenant, 0, b, False)
                if outcome != "ok":
                    self.samples.append(
                        Sample("retry", "applyChanges", b.tenant.key, 0, "failure", detail)
                    )
                    self.unacked.append(b)
                else:
                    self.acked.append(b)
        finally:
            await http.close()
        return len(retried)


async def import_workspaces(
    args: argparse.Namespace, dsn: str
) -> list[tuple[str, int, dict[str, str]]]:
    """Generate and import `args.workspaces` workspaces (the first `args.largest` times
    `args.messages` messages, the others `args.messages`): (key, messages, markers) each."""
    out = []
    with tempfile.TemporaryDirectory(prefix="recall-scale-") as tmp:
        for i in range(args.workspaces):
            n = args.messages * (args.largest if i == 0 else 1)
            key = f"scale{i}"
            path = Path(tmp) / f"{key}.json"
            summary = generate_file(n, args.seed + i, path)
            # The generator names its workspace `bench` on the first line: each gets its own.
            text = path.read_text()
            first, rest = text.split("\n", 1)
            path.write_text(first.replace('"key": "bench"', f'"key": "{key}"', 1) + "\n" + rest)
            result = await import_file(dsn, path)
            say(f"imported {key}: {n} messages, {result.get('messages_per_second')} msg/s")
            out.append((key, n, summary.markers))
    return out


async def tenants_of(
    conn: asyncpg.Connection, http: httpx.AsyncClient, imported: list[tuple[str, int, Any]]
) -> list[Tenant]:
    from app.data.tokens import issue_actor_token, issue_connector_token
    from bench.live import _public_channels

    tenants = []
    for key, n, mk in imported:
        ws = await conn.fetchval("select id from workspaces where key = $1", key)
        ids = {
            r["key"]: r["id"]
            for r in await conn.fetch(
                "select key, id from actors where workspace_id = $1 and key = any($2::text[])",
                ws,
                [mk["heavy_member"]],
            )
        }
        scout_dm = await conn.fetchval(
            "select id from scopes where workspace_id = $1 and key = $2", ws, mk["scout_dm"]
        )
        agent = await issue_actor_token(conn, key, "agent", mk["scout_agent"])
        turns = []
        for _ in range(4):
            scope, requester = (
                encode_id("Scope", scout_dm),
                encode_id("Member", ids[mk["heavy_member"]]),
            )
            body = await start_turn(http, agent, scope, requester)
            turns.append(body["data"]["startTurn"]["token"])
        tenants.append(
            Tenant(
                key=key,
                id=ws,
                messages=n,
                member=await issue_actor_token(conn, key, "member", mk["heavy_member"]),
                connector=await issue_connector_token(conn, key),
                turns=turns,
                channels=await _public_channels(conn, ws),
                terms=[mk["rare"], mk["mid"], mk["common"]],
            )
        )
    return tenants


def summary(samples: list[Sample], phases: list[str]) -> dict[str, Any]:
    """Per phase and kind: requests, ok, expected unavailable answers, failures, p50 and p99
    of the ok ones (ms), and the slowest unavailable answer."""
    out: dict[str, Any] = {}
    for phase in [*phases, "retry"]:
        rows: dict[str, Any] = {}
        for kind in KINDS:
            mine = [s for s in samples if s.phase == phase and s.kind == kind]
            if not mine:
                continue
            ok = [s.ms for s in mine if s.outcome == "ok"]
            unavailable = [s.ms for s in mine if s.outcome == "unavailable"]
            failures = [s for s in mine if s.outcome == "failure"]
            rows[kind] = {
                "requests": len(mine),
                "ok": len(ok),
                "unavailable": len(unavailable),
                "failures": len(failures),
                # Of which 503s (SERVICE_UNAVAILABLE, try again) for a workspace whose node was
                # up; the rest are 500s, other errors, partial pages or slow answers.
                "failures_503": sum(1 for s in failures if s.detail.startswith("HTTP 503")),
                "p50_ms": round(statistics.median(ok), 1) if ok else None,
                "p99_ms": round(pct(ok, 0.99), 1) if ok else None,
                "unavailable_max_ms": round(max(unavailable), 1) if unavailable else None,
                "first_failure": failures[0].detail if failures else None,
                "failures_by_tenant": dict(Counter(s.tenant for s in failures)),
            }
        if rows:
            out[phase] = rows
    return out
