"""Live push through graphql-ws, the reference client of the graphql-transport-ws protocol, on
Node's ws (pinned in tests/live_client_ts/package-lock.json): the way a frontend subscribes.
It found four defects our own Python client did not (docs/live.md: errors before execution,
operators read at start, resuming too far behind, frames that are not objects)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import asyncpg
import pytest

from app.request.ids import encode_id
from tests.live.conftest import Acme

CLIENT = Path(__file__).resolve().parents[1] / "live_client_ts"


async def test_graphql_ws_subscribes_resumes_and_reads_errors_as_a_frontend_does(
    acme: Acme, db: asyncpg.Connection
) -> None:
    """CI installs the client (`npm ci`, .ci/run) and sets RECALL_REQUIRE_NODE=1, so a missing
    node fails rather than skips."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        if os.environ.get("RECALL_REQUIRE_NODE") == "1":
            pytest.fail("RECALL_REQUIRE_NODE=1 but node/npm are not installed")
        pytest.skip("node and npm are not installed")
    if not (CLIENT / "node_modules" / "graphql-ws").is_dir():
        install = await asyncio.create_subprocess_exec(
            npm, "ci", "--no-audit", "--no-fund", "--prefix", str(CLIENT)
        )
        assert await install.wait() == 0
    general = await db.fetchval("select id from scopes where key = 'general'")
    config = {
        "ws": acme.base.replace("http://", "ws://") + "/graphql",
        "http": acme.base + "/graphql",
        "alice": acme.tokens["alice"],
        "bob": acme.tokens["bob"],
        "connector": acme.connector,
        "generalId": encode_id("Scope", general),
        # Long enough for a subscription sent to be listening before the first post.
        "settle": 700,
    }
    proc = await asyncio.create_subprocess_exec(
        node,
        str(CLIENT / "client.mjs"),
        json.dumps(config),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, out.decode() + err.decode()
    seen = json.loads(out.decode().strip().splitlines()[-1])

    delivery = seen["delivery"]
    # Alice reads both channels; Bob is not in #secret: its post never reaches him.
    assert sorted(delivery["aliceSearch"]) == ["ws-public", "ws-secret"]
    assert delivery["aliceScope"] == ["ws-public"]
    assert delivery["bobSearch"] == ["ws-public"]
    assert all(h == [{"start": 0, "end": 5}] for h in delivery["highlights"])
    assert delivery["errors"] == [None, None, None]

    errors = seen["errors"]
    assert errors["badId"] == ["BAD_USER_INPUT"]  # an `error` message: before execution
    assert errors["badDate"] == [["BAD_USER_INPUT"]] and errors["badDateCompleted"]

    # 4401 ends it: graphql-ws does not retry a bad token.
    assert seen["badToken"] == {"sink": {"closeCode": 4401}, "closed": [4401], "sockets": 1}

    assert seen["resume"] == {"first": ["ws-q1"], "resumed": ["ws-q2"]}

    keep_alive = seen["keepAlive"]
    assert keep_alive["pongs"] >= 3 and keep_alive["after"] == ["ws-okapi"]
    assert keep_alive["errors"] is None
