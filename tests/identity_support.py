"""Helpers for the linked-identity tests (docs/identity.md): a workspace with two namespaces,
and the link mutations over GraphQL (`link` makes a live link: start, confirm, approve).

Workspace `acme`, namespace slack:acme (the default), plus web:acme and mail:acme:
  alice        slack; her web identity is `alice-web` ("Alice" too), her mail one `alice-mail`
  alicia       slack, also named "Alice": another person
  bob          slack;  `web-carol` is another person in web:acme
  helper       an agent (no namespace) in every conversation below
  dm-alice     alice + helper                    (single reader: follows a link)
  t-dm         a thread under dm-alice           (single reader)
  solo         private channel, alice + helper   (single reader)
  pair         private channel, alice + bob      (two readers: never)
  group        dm of alice, bob and helper       (two readers: never)
  general      public channel of slack:acme      (another namespace's workspace audience: never)
  dm-alicia    alicia + helper                   (another person: never)
  web-dm       alice-web + helper                (B's DM)
  web-group    dm of alice-web, web-carol, helper (two readers on B's side: never)
  web-public   public channel of web:acme
  mail-dm      alice-mail + helper
Every message says "zebra", so one search shows what each reader may read.
"""

from __future__ import annotations

from typing import Any

from tests.client import GraphQLClient
from tests.personas import people

START_LINK = "mutation { startIdentityLink { code expiresAt } }"
LINK_FIELDS = "id status verifiedAt approvedAt approveBefore revokedAt members { key namespace }"
CONFIRM_LINK = f"""
mutation($code: String!) {{ confirmIdentityLink(code: $code) {{ {LINK_FIELDS} }} }}
"""
APPROVE_LINK = f"""
mutation($id: ID!) {{ approveIdentityLink(id: $id) {{ {LINK_FIELDS} }} }}
"""
REVOKE_LINK = """
mutation($id: ID!) { revokeIdentityLink(id: $id) { id verifiedAt revokedAt members { key } } }
"""
LINKS_OF = """
query {
  viewer { member { key namespace identityLinks { id status revokedAt members { key } } } }
  viewerWorkspace: viewer { workspace { members { key namespace identityLinks { id } } } }
}
"""


def _scope(key: str, kind: str, members: list[str], **extra: Any) -> dict[str, Any]:
    return {"key": key, "kind": kind, "members": members, **extra}


def _msg(key: str, scope: str, author: str, minute: int, body: str, **extra: Any) -> dict[str, Any]:
    return {
        "key": key,
        "scope": scope,
        "author": author,
        "at": f"2026-03-02T10:{minute:02d}:00Z",
        "body": body,
        **extra,
    }


def linked_acme() -> dict[str, Any]:
    web, mail = "web:acme", "mail:acme"
    return {
        "workspace": {"key": "acme", "name": "Acme"},
        "namespace": "slack:acme",
        "members": [
            *people("alice"),
            {"key": "alicia", "name": "Alice"},
            *people("bob"),
            {"key": "alice-web", "name": "Alice", "namespace": web},
            {"key": "web-carol", "name": "Carol", "namespace": web},
            {"key": "alice-mail", "name": "Alice", "namespace": mail},
        ],
        "agents": people("helper"),
        "scopes": [
            _scope("dm-alice", "dm", ["alice", "helper"]),
            {"key": "t-dm", "kind": "thread", "parent": "dm-alice", "root": "da1"},
            _scope("solo", "channel", ["alice", "helper"], visibility="private", name="solo"),
            _scope("pair", "channel", ["alice", "bob", "helper"], visibility="private"),
            _scope("group", "dm", ["alice", "bob", "helper"]),
            _scope("general", "channel", ["alice", "bob", "helper"], visibility="public"),
            _scope("dm-alicia", "dm", ["alicia", "helper"]),
            _scope("web-dm", "dm", ["alice-web", "helper"], namespace=web),
            _scope("web-group", "dm", ["alice-web", "web-carol", "helper"], namespace=web),
            _scope(
                "web-public", "channel", ["alice-web", "helper"], visibility="public", namespace=web
            ),
            _scope("mail-dm", "dm", ["alice-mail", "helper"], namespace=mail),
        ],
        "memories": [
            {"key": "mem-alice", "audience": {"kind": "members", "readers": ["alice"]}},
            {"key": "mem-pair", "audience": {"kind": "members", "readers": ["alice", "bob"]}},
        ],
        "messages": [
            _msg("da1", "dm-alice", "alice", 0, "zebra my private dm note"),
            _msg("da2", "dm-alice", "helper", 1, "zebra noted from the dm", sources=["da1"]),
            _msg("da3", "dm-alice", "helper", 2, "zebra reply built on pair", sources=["pa1"]),
            _msg("da4", "dm-alice", "helper", 3, "zebra memory reply", memorySources=["mem-alice"]),
            _msg("da5", "dm-alice", "helper", 4, "zebra pair memory", memorySources=["mem-pair"]),
            _msg("td1", "t-dm", "alice", 5, "zebra thread note"),
            _msg("so1", "solo", "alice", 6, "zebra solo channel note"),
            _msg("pa1", "pair", "alice", 7, "zebra pair channel note"),
            _msg("gr1", "group", "bob", 8, "zebra group dm note"),
            _msg("ge1", "general", "alice", 9, "zebra general public note"),
            _msg("dal1", "dm-alicia", "alicia", 10, "zebra alicia own note"),
            _msg("wb1", "web-dm", "alice-web", 11, "zebra web dm hello"),
            _msg("wg1", "web-group", "web-carol", 12, "zebra web group note"),
            _msg("wp1", "web-public", "alice-web", 13, "zebra web public note"),
            _msg("ml1", "mail-dm", "alice-mail", 14, "zebra mail dm note"),
        ],
    }


# What a link opens, from alice's slack side into alice-web's view, and what it never does.
FOLLOWS = {"da1", "da2", "da4", "td1", "so1"}
NEVER = {"da3", "da5", "pa1", "gr1", "ge1", "dal1", "wg1", "ml1"}


async def start_code(client: GraphQLClient, token: str) -> str:
    data = await client.gql(START_LINK, token=token)
    code: str = data["startIdentityLink"]["code"]
    return code


async def confirm(client: GraphQLClient, token: str, code: str) -> dict[str, Any]:
    data = await client.gql(CONFIRM_LINK, {"code": code}, token=token)
    link: dict[str, Any] = data["confirmIdentityLink"]
    return link


async def approve(client: GraphQLClient, token: str, link_id: str) -> dict[str, Any]:
    data = await client.gql(APPROVE_LINK, {"id": link_id}, token=token)
    approved: dict[str, Any] = data["approveIdentityLink"]
    return approved


async def link(client: GraphQLClient, starter: str, confirmer: str) -> dict[str, Any]:
    """A live link between two identities: `starter` starts a code, `confirmer` confirms it,
    `starter` approves the confirmer (member tokens)."""
    pending = await confirm(client, confirmer, await start_code(client, starter))
    return await approve(client, starter, pending["id"])


async def revoke(client: GraphQLClient, token: str, link_id: str) -> dict[str, Any]:
    data = await client.gql(REVOKE_LINK, {"id": link_id}, token=token)
    revoked: dict[str, Any] = data["revokeIdentityLink"]
    return revoked
