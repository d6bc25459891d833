"""The evaluation set: eval/data/stories.json (eval/stories.py) plus seeded noise, as a fixture (docs/fixtures.md) and a
query file with graded judgments and the tuning / held-out split.

    python -m eval.generate            # rewrites eval/data/fixture.json and eval/data/queries.json

Deterministic: the same stories and seed give byte-identical files (tests/test_eval_data.py
checks the committed ones). Times are written relative to ANCHOR; the runner shifts them so
that the newest message is as old at every run as it is here.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from eval.stories import AGENTS, DMS, MEMBERS, SCOPES, STORIES, TURNS

ANCHOR = datetime(2026, 12, 1, 0, 0, tzinfo=UTC)
DATA = Path(__file__).parent / "data"
SEED = 20261201
NOISE = 1000
DAYS = 90

# --- seeded noise: the everyday chatter a real workspace buries its answers in -------------

_PEOPLE = [*MEMBERS]
_TASKS = [
    "the checkout retry refactor",
    "payment service logging",
    "the customer export page",
    "reviewing Dev's PR on invoices",
    "deploy pipeline cleanup",
    "the billing config loader",
    "the checkout-service dashboard",
    "on-call handover notes",
    "flaky deploy job on staging",
    "customer onboarding emails",
    "the payment form validation",
    "retry metrics in Grafana",
    "the invoice email template",
    "error budget report",
    "the admin search page",
    "API docs for webhooks",
    "pricing experiment analysis",
    "support macro cleanup",
    "database index for the orders table",
    "the mobile release checklist",
]
_STANDUP = [
    "Yesterday: {a}. Today: {b}. Blockers: none.",
    "yesterday {a}, today {b}, no blockers",
    "Today: {a}, then {b} if time allows.",
    "Still on {a}. Blocked on review for {b}.",
]
_DEPLOY = [
    "Deployed checkout-service {v} to production.",
    "Deploying payment-gateway {v} to staging, please hold merges for 10 minutes.",
    "Release {v} is out: minor fixes to checkout and the customer portal.",
    "Rollout of billing-worker {v} complete, no errors in the first hour.",
    "Hotfix {v} deployed, the retry button on the payment page works again.",
]
_SUPPORT = [
    "Customer asked how to update their card, sent them the help article.",
    "Ticket from a customer who cannot find last month's invoice, resolved.",
    "Customer wants to change the billing email, done.",
    "Someone asked if we support Apple Pay at checkout. Not yet, logged the request.",
    "Customer reports the payment page is slow, could not reproduce, asked for a HAR file.",
    "Closed 14 tickets today, mostly password resets and invoice copies.",
    "A customer asked whether a failed payment is retried automatically. Yes, explained the schedule.",
    "Customer error message on checkout was a typo in their postcode.",
    "Refund requested for a duplicate seat, handled with prorated credit.",
    "Enterprise customer wants a call about their invoice format next week.",
]
_SCHEDULE = [
    "Can we move our 1:1 to Thursday?",
    "Planning meeting moved to 15:00 today.",
    "I'm out Friday afternoon, back Monday.",
    "Retro at 16:00, bring one thing that went well.",
    "Who has time for a quick call about the roadmap this week?",
    "Reminder: all-hands tomorrow at 17:00 CET.",
    "Sprint review is on Wednesday this time, Tuesday is booked.",
    "Dentist appointment, online again at 11.",
]
_RANDOM = [
    "lunch anyone? thinking ramen",
    "coffee machine on 3rd floor is broken again",
    "happy friday!",
    "who left the oat milk in the fridge since last month",
    "photos from the team dinner are in the shared drive",
    "anyone watching the match tonight?",
    "new plant in the kitchen, its name is Gerald",
    "the wifi in the meeting room is flaky",
    "book club: we're reading The Phoenix Project next",
    "bike parking is full again",
]
_CJK = [
    "今日のミーティングは15時からです。",
    "お疲れさまでした！",
    "明日は在宅勤務です。",
    "午饭吃什么？",
    "今天下午我请假。",
    "周会改到周四上午。",
    "東京オフィスの会議室を予約しました。",
    "代码评审请在今天完成。",
    "新しいメンバーが来週から参加します。",
]
_RAMBLE = [
    "Payment retries again: the payment retry job retries payments, and when a payment retry fails the payment page shows the retry error, so customers retry the payment themselves and we get more payment retries. We should look at payment retries as a whole at some point.",
    "Checkout checkout checkout. Every checkout question this week was about checkout errors on the checkout page: checkout timeouts, checkout retries, checkout emails. I think the checkout flow needs a checkout FAQ.",
    "The deploy today was a normal deploy, deploy logs look fine, the deploy took 12 minutes, and the next deploy is tomorrow. Deploy notes are in the deploy channel as usual after every deploy.",
    "Customer, customer, customer: every customer call today was a customer asking about the customer portal. Customer success should write a customer guide for the customer portal.",
    "Error rates look normal. A few errors in the error tracker, error volume is within the error budget, no new error types, the usual error noise from bots.",
    "Config change review: config files for the config service, config flags and config defaults. The config is fine, I checked every config key in the config repo.",
    "Invoice run finished. Invoices sent, invoice emails delivered, invoice PDFs generated, a handful of invoice bounces as usual. Invoice totals match the invoice ledger.",
    "Timeouts: some timeouts on staging, timeouts on the test runner, and the usual timeouts from the sandbox API. None of the timeouts look like production timeouts.",
]
_AGENT_ASK = [
    "scout, summarize yesterday's discussion in #eng for me.",
    "scout, what's on my calendar tomorrow?",
    "scout, draft a reply to the customer about their invoice.",
    "atlas, which tickets are waiting on engineering?",
    "atlas, find the help article about updating a card.",
]
_AGENT_ANSWER = [
    "Here is a summary: mostly deploy notes, a checkout retry PR, and the support queue.",
    "Done, I drafted it in the ticket. It explains the invoice and the payment schedule.",
    "Three tickets are waiting on engineering: a payment page error, an export bug, and an invoice question.",
    "I found the article 'Updating your payment method' and linked it.",
]


def _noise(rng: random.Random, n: int) -> list[dict[str, Any]]:
    channels = ["general", "eng", "incidents", "support", "releases", "random"]
    privates = ["leadership", "billing-ops", "tokyo", "acme-shared"]
    out: list[dict[str, Any]] = []
    for i in range(n):
        roll = rng.random()
        if roll < 0.2:
            scope, body = (
                "eng",
                rng.choice(_STANDUP).format(a=rng.choice(_TASKS), b=rng.choice(_TASKS)),
            )
        elif roll < 0.32:
            v = f"{rng.randint(2, 5)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
            scope, body = "releases", rng.choice(_DEPLOY).format(v=v)
        elif roll < 0.47:
            scope, body = "support", rng.choice(_SUPPORT)
        elif roll < 0.57:
            scope, body = rng.choice(channels), rng.choice(_SCHEDULE)
        elif roll < 0.67:
            scope, body = "random", rng.choice(_RANDOM)
        elif roll < 0.72:
            scope, body = rng.choice(["tokyo", "random"]), rng.choice(_CJK)
        elif roll < 0.80:
            scope, body = rng.choice(channels), rng.choice(_RAMBLE)
        elif roll < 0.88:
            scope = rng.choice(privates)
            body = rng.choice(_SUPPORT + _SCHEDULE + _STANDUP).format(
                a=rng.choice(_TASKS), b=rng.choice(_TASKS)
            )
        else:
            scope = rng.choice([*DMS])
            agent = next(k for k in DMS[scope] if k in AGENTS)
            body = rng.choice(_AGENT_ANSWER) if rng.random() < 0.5 else rng.choice(_AGENT_ASK)
            out.append(
                _noise_message(rng, i, scope, agent if body in _AGENT_ANSWER else None, body)
            )
            continue
        out.append(_noise_message(rng, i, scope, None, body))
    return out


def _noise_message(
    rng: random.Random, i: int, scope: str, author: str | None, body: str
) -> dict[str, Any]:
    members = DMS[scope] if scope in DMS else SCOPES[scope]["members"]
    assert isinstance(members, list)
    people = [m for m in members if m in MEMBERS]
    minutes = rng.randint(0, DAYS * 24 * 60)
    return {
        "key": f"noise.{i:04d}",
        "scope": scope,
        "author": author or rng.choice(people),
        "at": _at(minutes / 1440.0, 0),
        "body": body,
    }


def _at(days_ago: float, minute: int) -> str:
    t = ANCHOR - timedelta(days=days_ago) + timedelta(minutes=minute)
    assert t < ANCHOR, t
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


# --- the fixture and the queries -------------------------------------------------------------


def fixture() -> dict[str, Any]:
    scopes: list[dict[str, Any]] = [
        {"key": k, "kind": "channel", "name": k, **v} for k, v in SCOPES.items()
    ]
    scopes += [{"key": k, "kind": "dm", "members": v} for k, v in DMS.items()]
    messages: list[dict[str, Any]] = []
    for story in STORIES:
        by_key = {m.key: m for m in story.messages}
        for m in story.messages:
            scope = m.scope
            if scope.startswith("thread:"):
                root = by_key[scope.removeprefix("thread:")]
                scope = f"{story.key}.{root.key}.thread"
                if not any(s["key"] == scope for s in scopes):
                    scopes.append(
                        {"key": scope, "kind": "thread", "parent": root.scope,
                         "root": f"{story.key}.{root.key}"}
                    )  # fmt: skip
            message: dict[str, Any] = {
                "key": f"{story.key}.{m.key}",
                "scope": scope,
                "author": m.author,
                # Story messages start at 09:00 of their day.
                "at": _at(story.days_ago, 9 * 60 + m.minute),
                "body": m.body,
            }
            if m.sources:
                message["sources"] = [f"{story.key}.{s}" for s in m.sources]
            messages.append(message)
    messages += _noise(random.Random(SEED), NOISE)
    return {
        "workspace": {"key": "northwind", "name": "Northwind Payments"},
        "namespace": "slack:northwind",
        "members": [{"key": k, "name": v} for k, v in MEMBERS.items()],
        "agents": [{"key": k, "name": n, "owner": o} for k, (n, o) in AGENTS.items()],
        "scopes": scopes,
        "messages": messages,
    }


def queries() -> dict[str, Any]:
    """Every query with its turn, kind, grades and split. The split alternates within each kind
    (in story order), so both halves hold every kind in equal measure."""
    rows: list[dict[str, Any]] = []
    seen: dict[str, int] = defaultdict(int)
    for story in STORIES:
        for n, q in enumerate(story.queries, 1):
            agent, scope, requester = TURNS[q.turn]
            split = "tuning" if seen[q.kind] % 2 == 0 else "heldout"
            seen[q.kind] += 1
            rows.append(
                {
                    "id": f"{story.key}.q{n}",
                    "query": q.text,
                    "kind": q.kind,
                    "split": split,
                    "turn": {"agent": agent, "scope": scope, "requester": requester},
                    "grades": {f"{story.key}.{k}": g for k, g in q.grades.items()},
                }
            )
    return {"anchor": ANCHOR.isoformat(), "queries": rows}


def write(folder: Path = DATA) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in (("fixture.json", fixture()), ("queries.json", queries())):
        (folder / name).write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DATA, help="folder (default eval/data)")
    write(parser.parse_args(argv).out)


if __name__ == "__main__":
    main()
