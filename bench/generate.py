"""A deterministic, realistic workspace fixture for the benchmark (docs/fixtures.md).

    python -m bench.generate --messages 1000000 --seed 1 --out /tmp/bench.json

Same seed and size, byte-identical file: one `random.Random(seed)`, no set or dict iteration
whose order depends on hashing, timestamps from a fixed epoch. The file is streamed (messages
first, then the actors and scopes, whose thread list is only known at the end), so memory
stays flat. Progress goes to stderr; a JSON summary with the marker terms goes to stdout.

Marker terms have controlled frequencies, so the benchmark knows what it is asking for:
  rare    `quokkaflux`      exactly RARE_COUNT messages, spread over the whole history
  mid     `kestrel`         ~1% of messages
  common  `orbit`           ~25% of messages
  phrase  "cache stampede"  ~0.5% as a phrase (both words also occur apart)
  cjk     `数据库`           ~20% of the ~5% CJK lines
  lowvis  `vespera`         ~10% of messages, only in private channels, shared channels and DMs
and personas: PERSONA_HEAVY reads most of the workspace, PERSONA_LOWVIS is in two mid-sized
private channels and one quiet DM (public channels are readable by everyone, so the low-visibility
case is `vespera`, whose matches are almost all outside what that person may read).
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import time
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

WORKSPACE = "bench"
NAMESPACE = "slack:bench"
PERSONA_HEAVY = "u00001"
PERSONA_LOWVIS = "u00002"
SCOUT_AGENT = "a001"  # owned by PERSONA_HEAVY; perspective ~ a quarter of the messages
RARE, MID, COMMON, PHRASE, CJK_WORD, LOWVIS = (
    "quokkaflux",
    "kestrel",
    "orbit",
    "cache stampede",
    "数据库",
    "vespera",
)
RARE_COUNT = 10
_EPOCH = 1_704_067_200  # 2024-01-01T00:00:00Z

_FIRST = [
    "Alice",
    "Bob",
    "Carol",
    "Dave",
    "Erin",
    "Frank",
    "Grace",
    "Heidi",
    "Ivan",
    "Judy",
    "Mallory",
    "Niaj",
    "Olivia",
    "Peggy",
    "Rupert",
    "Sybil",
    "Trent",
    "Victor",
    "Walter",
    "Yusuf",
    "Zoe",
    "Priya",
    "Kenji",
    "Mei",
    "Lars",
    "Ana",
    "Omar",
    "Fatima",
    "Diego",
    "Ingrid",
    "Tomasz",
    "Aisha",
    "Chen",
    "Haruto",
    "Sofia",
    "Mateo",
    "Leila",
    "Nikolai",
    "Amara",
    "Sam",
]
_LAST = [
    "Chen",
    "Okafor",
    "Diaz",
    "Kim",
    "Walsh",
    "Müller",
    "Liu",
    "Tanaka",
    "Petrov",
    "Park",
    "Rivera",
    "Osei",
    "Shah",
    "Novak",
    "Silva",
    "Nakamura",
    "Haddad",
    "Costa",
    "Berg",
    "Ivanova",
    "Kowalski",
    "Mensah",
    "Rossi",
    "Dubois",
    "Jensen",
    "Ito",
    "Patel",
    "Garcia",
]
_WORDS = [
    "the",
    "to",
    "and",
    "a",
    "of",
    "we",
    "it",
    "is",
    "in",
    "for",
    "that",
    "on",
    "this",
    "be",
    "with",
    "can",
    "should",
    "deploy",
    "build",
    "test",
    "fix",
    "service",
    "api",
    "request",
    "error",
    "latency",
    "cache",
    "queue",
    "worker",
    "database",
    "index",
    "query",
    "migration",
    "schema",
    "release",
    "branch",
    "merge",
    "review",
    "ticket",
    "customer",
    "incident",
    "alert",
    "dashboard",
    "metrics",
    "log",
    "config",
    "flag",
    "rollout",
    "rollback",
    "staging",
    "production",
    "cluster",
    "node",
    "pod",
    "memory",
    "cpu",
    "disk",
    "timeout",
    "retry",
    "backoff",
    "token",
    "auth",
    "session",
    "user",
    "account",
    "billing",
    "invoice",
    "payment",
    "webhook",
    "event",
    "stream",
    "pipeline",
    "job",
    "cron",
    "script",
    "docs",
    "spec",
    "design",
    "meeting",
    "sync",
    "standup",
    "sprint",
    "roadmap",
    "estimate",
    "blocker",
    "owner",
    "team",
    "oncall",
    "pager",
    "postmortem",
    "runbook",
    "playbook",
    "upgrade",
    "version",
    "dependency",
    "package",
    "library",
    "client",
    "server",
    "frontend",
    "backend",
    "mobile",
    "browser",
    "endpoint",
    "payload",
    "response",
    "status",
    "header",
    "cookie",
    "redirect",
    "proxy",
    "gateway",
    "loadbalancer",
    "dns",
    "certificate",
    "tls",
    "ssh",
    "vpn",
    "firewall",
    "permission",
    "role",
    "policy",
    "audit",
    "compliance",
    "privacy",
    "export",
    "import",
    "csv",
    "report",
    "chart",
    "quarter",
    "budget",
    "hiring",
    "onboarding",
    "offsite",
    "lunch",
    "coffee",
    "weekend",
    "holiday",
    "thanks",
    "please",
    "maybe",
    "today",
    "tomorrow",
    "yesterday",
    "soon",
    "later",
    "quick",
    "question",
    "idea",
    "update",
]
_SYLLABLES = [
    "ka",
    "ri",
    "to",
    "mo",
    "na",
    "shi",
    "ven",
    "lor",
    "bex",
    "tal",
    "qui",
    "dor",
    "fen",
    "gra",
    "lum",
    "pex",
    "sor",
    "tiv",
    "zan",
    "ul",
]
_CJK_LINES = (
    "明天的站会改到十点。",
    "这个问题我来看一下。",
    "了解しました、確認します。",
    "今日はリモートで働きます。",
    "代码审查已经完成了。",
    "部署之后延迟明显下降了。",
    "東京リージョンでエラーが出ています。",
    "请大家提前准备回滚方案。",
    "障害は解消されました。",
    "新版本下周发布。",
)
_CJK_DB_LINES = (
    "数据库迁移计划下周五开始。",
    "我们把数据库升级到新版本了。",
    "数据库的连接池已经满了。",
)
_ERRORS = (
    "ConnectionResetError: [Errno 104] Connection reset by peer",
    "psycopg.OperationalError: server closed the connection unexpectedly",
    "TimeoutError: request to {svc} timed out after 30s",
    "KeyError: 'customer_id' in {svc}/handlers.py line 212",
    "HTTP 502 Bad Gateway from {svc}",
)
_SERVICES = [
    "checkout",
    "search",
    "auth",
    "billing",
    "notifications",
    "orders",
    "inventory",
    "gateway",
]
_ERR_CODES = ["ERR_CONN_RESET", "ERR_TIMEOUT", "ERR_QUOTA_EXCEEDED", "ERR_AUTH_EXPIRED", "E_NOSPC"]


@dataclass(slots=True)
class _Scope:
    key: str
    kind: str
    visibility: str | None
    members: list[str]
    name: str | None = None
    parent: str | None = None
    root: str | None = None
    agents: list[str] = field(default_factory=list)
    recent: list[str] = field(default_factory=list)  # last few message keys, for provenance


@dataclass(frozen=True, slots=True)
class Summary:
    messages: int
    members: int
    agents: int
    scopes: int
    threads: int
    memories: int
    bytes: int
    seconds: float
    markers: dict[str, str]
    marker_counts: dict[str, int]


def _zipf_cum(n: int, s: float = 1.07) -> list[float]:
    return list(itertools.accumulate(1.0 / (r**s) for r in range(1, n + 1)))


def _pick(rng: random.Random, items: list[Any], cum: list[float]) -> Any:
    return items[bisect_right(cum, rng.random() * cum[-1])]


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    words = list(_WORDS)
    seen = set(words) | {RARE, MID, COMMON, LOWVIS, "cache", "stampede"}
    while len(words) < size:
        w = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


def generate(messages: int, seed: int, out: TextIO, progress: TextIO | None = None) -> Summary:
    """Write the fixture to `out` and return what was written."""
    started = time.perf_counter()
    rng = random.Random(seed)
    n_people = max(50, messages // 250)
    n_agents = min(80, max(8, n_people // 60))
    n_public = max(8, messages // 5000)
    n_private = max(8, messages // 5000)
    n_shared = max(2, messages // 50_000)
    n_dm_pp = max(20, n_people)
    people = [f"u{i:05d}" for i in range(1, n_people + 1)]
    # Heavy persona first in every list so that it is a prolific author too.
    others = people[2:]
    agents = [f"a{i:03d}" for i in range(1, n_agents + 1)]
    owners = {a: (PERSONA_HEAVY if a == SCOUT_AGENT else rng.choice(others)) for a in agents}

    def sample(k: int) -> list[str]:
        return rng.sample(others, min(k, len(others)))

    scopes: list[_Scope] = []
    public: list[_Scope] = []
    for i in range(n_public):
        s = _Scope(
            f"pub-{i:04d}", "channel", "public", [PERSONA_HEAVY, *sample(rng.randint(10, 200))]
        )
        s.name = s.key
        public.append(s)
    private: list[_Scope] = []
    for i in range(n_private):
        s = _Scope(f"priv-{i:04d}", "channel", "private", sample(rng.randint(3, 30)))
        s.name = s.key
        if i % 5 != 4:
            s.members.insert(0, PERSONA_HEAVY)
        private.append(s)
    # The low-visibility persona: two private channels from the quieter end of the size ranking.
    for s in (private[len(private) * 3 // 4], private[len(private) * 3 // 4 + 1]):
        s.members.append(PERSONA_LOWVIS)
    shared = [
        _Scope(f"shared-{i:03d}", "channel", "shared", [PERSONA_HEAVY, *sample(rng.randint(3, 12))])
        for i in range(n_shared)
    ]
    for s in shared:
        s.name = s.key
    dms: list[_Scope] = []
    for i in range(n_dm_pp):
        a = PERSONA_HEAVY if i % 4 == 0 else rng.choice(others)
        b = rng.choice(others)
        while b == a:
            b = rng.choice(others)
        dms.append(_Scope(f"dm-{i:05d}", "dm", None, [a, b]))
    # Late in the Zipf ranking: a quiet DM.
    dms.append(_Scope("dm-lowvis", "dm", None, [PERSONA_LOWVIS, PERSONA_HEAVY]))
    for a in agents:
        s = _Scope(f"dm-{owners[a]}-{a}", "dm", None, [owners[a], a], agents=[a])
        dms.append(s)
    # Agents join a few channels; the scout joins every other public channel (by volume rank).
    for a in agents:
        joined = public[0::2] if a == SCOUT_AGENT else rng.sample(public, min(3, len(public)))
        for s in [*joined, *rng.sample(private, 2)]:
            s.members.append(a)
            s.agents.append(a)
    scopes = [*public, *private, *shared, *dms]
    parent_of = {s.key: s for s in scopes}

    memories: list[dict[str, Any]] = []
    agent_memories: dict[str, list[str]] = {}
    for a in agents:
        keys = []
        for j, audience in enumerate(
            ({"kind": "members", "readers": [owners[a]]}, {"kind": "workspace"}, {"kind": "public"})
        ):
            key = f"mem-{a}-{j}"
            memories.append({"key": key, "audience": audience})
            keys.append(key)
        agent_memories[a] = keys

    # Where messages go: a category, then a Zipf choice within it.
    groups: list[tuple[float, list[_Scope]]] = [
        (0.45, public),
        (0.15, private),
        (0.03, shared),
        (0.25, dms),
    ]
    group_cum = [_zipf_cum(len(g), 0.9) for _, g in groups]
    vocab = _vocabulary(rng, 6000)
    vocab_cum = _zipf_cum(len(vocab))
    names = [f"@{f}" for f in _FIRST]
    threads: list[_Scope] = []
    open_threads: list[_Scope] = []
    rare_at = set(rng.sample(range(messages), min(RARE_COUNT, messages)))
    no_evidence_at = set(rng.sample(range(messages), min(max(3, messages // 20_000), messages)))
    counts = dict.fromkeys(("rare", "mid", "common", "phrase", "cjk", "lowvis", "cjk_lines"), 0)
    at = _EPOCH
    written = 0

    out.write(json.dumps({"key": WORKSPACE, "name": "Bench Co"}).join(('{"workspace":', ",")))
    out.write(f'"namespace":{json.dumps(NAMESPACE)},"messages":[\n')
    for n in range(messages):
        r = rng.random()
        if r < 0.12 and open_threads:
            scope = open_threads[int(rng.random() ** 2 * len(open_threads))]
        else:
            x = rng.random() * 0.88
            gi = 0
            while gi < len(groups) - 1 and x >= groups[gi][0]:
                x -= groups[gi][0]
                gi += 1
            scope = _pick(rng, groups[gi][1], group_cum[gi])
        parent = scope if scope.parent is None else parent_of[scope.parent]
        speakers = (
            parent.agents
            if parent.agents and rng.random() < (0.45 if parent.kind == "dm" else 0.05)
            else [m for m in parent.members[:40] if not m.startswith("a")] or parent.members
        )
        author = speakers[int(rng.random() ** 1.5 * len(speakers))]
        key = f"m{n + 1:07d}"
        msg: dict[str, Any] = {"key": key, "scope": scope.key, "author": author}
        at += rng.randint(1, 120)
        msg["at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
        cjk = rng.random() < 0.05
        if cjk:
            counts["cjk_lines"] += 1
            if rng.random() < 0.2:
                body = rng.choice(_CJK_DB_LINES)
                counts["cjk"] += 1
            else:
                body = rng.choice(_CJK_LINES)
            words: list[str] = [body]
        else:
            words = rng.choices(vocab, cum_weights=vocab_cum, k=rng.randint(4, 18))
            extra = rng.random()
            if extra < 0.05:
                words.insert(rng.randrange(len(words)), rng.choice(names))
            elif extra < 0.10:
                words.append(rng.choice(_ERR_CODES))
            elif extra < 0.15:
                words.append(f"PROJ-{rng.randint(1, 9999)}")
            elif extra < 0.18:
                words.append(rng.choice(_ERRORS).format(svc=rng.choice(_SERVICES)))
            elif extra < 0.21:
                words.append(
                    f"https://wiki.example.com/{rng.choice(_SERVICES)}/{rng.randint(1, 999)}"
                )
            if rng.random() < 0.005:
                words.insert(rng.randrange(len(words)), "cache stampede")
                counts["phrase"] += 1
            if rng.random() < 0.01:
                words.insert(rng.randrange(len(words)), MID)
                counts["mid"] += 1
            if rng.random() < 0.25:
                words.insert(rng.randrange(len(words)), COMMON)
                counts["common"] += 1
            if parent.visibility != "public" and rng.random() < 0.22:
                words.insert(rng.randrange(len(words)), LOWVIS)
                counts["lowvis"] += 1
        if n in rare_at:
            words.append(RARE)
            counts["rare"] += 1
        msg["body"] = " ".join(words)
        if n in no_evidence_at:
            msg["evidence"] = False
        if author.startswith("a") and scope.recent:
            msg["sources"] = scope.recent[-rng.randint(1, min(3, len(scope.recent))) :]
            if rng.random() < 0.05:
                msg["memorySources"] = [rng.choice(agent_memories[author])]
        out.write(json.dumps(msg, ensure_ascii=False))
        out.write(",\n" if n + 1 < messages else "\n")
        written += 1
        scope.recent.append(key)
        if len(scope.recent) > 4:
            del scope.recent[0]
        # Threads: a channel or DM message sometimes becomes a root; a few dozen stay open.
        if scope.parent is None and rng.random() < 0.01:
            t = _Scope(f"t-{key}", "thread", None, [], parent=scope.key, root=key)
            threads.append(t)
            open_threads.insert(0, t)
            del open_threads[50:]
        if progress is not None and (n + 1) % 100_000 == 0:
            print(f"generated {n + 1}/{messages} messages", file=progress, flush=True)
    out.write('],"members":[\n')
    out.write(
        ",\n".join(
            json.dumps(
                {
                    "key": p,
                    "name": f"{_FIRST[i % len(_FIRST)]} {_LAST[i // len(_FIRST) % len(_LAST)]}",
                },
                ensure_ascii=False,
            )
            for i, p in enumerate(people)
        )
    )
    out.write('],"agents":[\n')
    out.write(
        ",\n".join(json.dumps({"key": a, "name": f"Agent {a}", "owner": owners[a]}) for a in agents)
    )
    out.write('],"scopes":[\n')
    rows = []
    for s in scopes:
        row: dict[str, Any] = {"key": s.key, "kind": s.kind}
        if s.visibility:
            row["visibility"] = s.visibility
        if s.name:
            row["name"] = s.name
        row["members"] = s.members
        rows.append(json.dumps(row))
    rows += [
        json.dumps({"key": t.key, "kind": "thread", "parent": t.parent, "root": t.root})
        for t in threads
    ]
    out.write(",\n".join(rows))
    out.write('],"memories":[\n')
    out.write(",\n".join(json.dumps(m) for m in memories))
    out.write("]}\n")
    return Summary(
        messages=written,
        members=len(people),
        agents=len(agents),
        scopes=len(scopes) + len(threads),
        threads=len(threads),
        memories=len(memories),
        bytes=out.tell() if out.seekable() else -1,
        seconds=round(time.perf_counter() - started, 3),
        markers={
            "rare": RARE,
            "mid": MID,
            "common": COMMON,
            "phrase": PHRASE,
            "cjk": CJK_WORD,
            "lowvis": LOWVIS,
            "heavy_member": PERSONA_HEAVY,
            "lowvis_member": PERSONA_LOWVIS,
            "scout_agent": SCOUT_AGENT,
            "scout_dm": f"dm-{PERSONA_HEAVY}-{SCOUT_AGENT}",
        },
        marker_counts=counts,
    )


def generate_file(messages: int, seed: int, path: Path, progress: TextIO | None = None) -> Summary:
    with path.open("w", encoding="utf-8", buffering=1 << 20) as out:
        return generate(messages, seed, out, progress)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.generate", description=__doc__.split("\n")[0])
    p.add_argument("--messages", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    if args.messages < 1:
        p.error("--messages must be positive")
    summary = generate_file(args.messages, args.seed, args.out, sys.stderr)
    print(json.dumps(_as_dict(args.out, summary), indent=2, ensure_ascii=False))


def _as_dict(path: Path, s: Summary) -> dict[str, Any]:
    return {"file": str(path), **{k: getattr(s, k) for k in s.__dataclass_fields__}}


if __name__ == "__main__":
    main()
