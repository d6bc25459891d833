// graphql-ws, the reference client of the graphql-transport-ws protocol, against Recall's
// /graphql, the way a frontend calls it: documents with variables, the sink API, keep-alive,
// resuming with `after`. tests/live/test_graphql_ws_interop.py starts the server, passes its
// address and tokens as one JSON argument, and asserts on the JSON this prints.
import WebSocket from "ws";
import { createClient } from "graphql-ws";

const config = JSON.parse(process.argv[2]);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let sockets = 0;
class CountedWebSocket extends WebSocket {
  constructor(...args) {
    super(...args);
    sockets += 1;
  }
}

function client(token, options = {}) {
  return createClient({
    url: config.ws,
    webSocketImpl: CountedWebSocket,
    connectionParams: { Authorization: `Bearer ${token}` },
    retryAttempts: 0,
    ...options,
  });
}

// Everything a subscription's sink receives.
function watch(c, query, variables) {
  const seen = { next: [], errors: null, complete: false };
  seen.dispose = c.subscribe(
    { query, variables },
    {
      next: (value) => seen.next.push(value),
      error: (error) => {
        seen.errors = Array.isArray(error)
          ? error.map((e) => e.extensions?.code ?? null)
          : { closeCode: error?.code ?? null };
      },
      complete: () => {
        seen.complete = true;
      },
    },
  );
  return seen;
}

async function until(check, ms = 10000) {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await sleep(25);
  }
}

async function post(key, scope, author, body) {
  const response = await fetch(config.http, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${config.connector}` },
    body: JSON.stringify({
      query: "mutation($c: [ChangeInput!]!) { applyChanges(changes: $c) { applied } }",
      variables: { c: [{ postMessage: { key, scope, author, at: new Date().toISOString(), body } }] },
    }),
  });
  const result = await response.json();
  if (result.errors) throw new Error(JSON.stringify(result.errors));
}

const SEARCH = `subscription Search($query: String!, $after: String) {
  messageSearchUpdates(query: $query, after: $after) {
    event kind edge { cursor node { key } highlights { start end } }
  }
}`;
const SCOPE = `subscription Scope($scopeId: ID!) {
  scopeMessages(scopeId: $scopeId) { event kind message { key } }
}`;
const keys = (seen) => seen.next.map((v) => {
  const update = Object.values(v.data ?? {})[0];
  return update?.edge?.node?.key ?? update?.message?.key ?? null;
});

const out = {};

// Two people, one hit each in a channel both read and in a private one only Alice reads.
{
  const alice = client(config.alice);
  const bob = client(config.bob);
  const aliceSearch = watch(alice, SEARCH, { query: "zebra" });
  const aliceScope = watch(alice, SCOPE, { scopeId: config.generalId });
  const bobSearch = watch(bob, SEARCH, { query: "zebra" });
  await sleep(config.settle);
  await post("ws-secret", "secret", "alice", "zebra behind the door");
  await post("ws-public", "general", "bob", "zebra in the open");
  await until(() => aliceSearch.next.length >= 2 && aliceScope.next.length >= 1 && bobSearch.next.length >= 1);
  await sleep(500); // anything more would arrive meanwhile
  out.delivery = {
    aliceSearch: keys(aliceSearch),
    aliceScope: keys(aliceScope),
    bobSearch: keys(bobSearch),
    highlights: aliceSearch.next.map((v) => v.data.messageSearchUpdates.edge.highlights),
    errors: [aliceSearch.errors, aliceScope.errors, bobSearch.errors],
  };
  for (const seen of [aliceSearch, aliceScope, bobSearch]) seen.dispose();
  await alice.dispose();
  await bob.dispose();
}

// Errors: a variable the schema refuses (before execution) and an operator a search refuses.
{
  const alice = client(config.alice);
  const badId = watch(alice, SCOPE, { scopeId: "garbage!!" });
  const badDate = watch(alice, SEARCH, { query: "zebra since:notadate" });
  await until(() => badId.errors !== null && (badDate.complete || badDate.errors !== null));
  out.errors = {
    badId: badId.errors,
    badDate: badDate.next.map((v) => (v.errors ?? []).map((e) => e.extensions?.code)),
    badDateCompleted: badDate.complete,
  };
  await alice.dispose();
}

// A bad token: closed with 4401, which graphql-ws does not retry.
{
  const before = sockets;
  const closed = [];
  const nobody = client("rcm_w1.nothing", {
    retryAttempts: 3,
    on: { closed: (event) => closed.push(event.code) },
  });
  const seen = watch(nobody, SEARCH, { query: "zebra" });
  await until(() => seen.errors !== null);
  await sleep(300);
  out.badToken = { sink: seen.errors, closed, sockets: sockets - before };
  await nobody.dispose();
}

// Resuming: the event missed while disconnected, once.
{
  const first = client(config.alice);
  const seen = watch(first, SEARCH, { query: "quagga" });
  await sleep(config.settle);
  await post("ws-q1", "general", "bob", "quagga one");
  await until(() => seen.next.length >= 1);
  const last = seen.next[0].data.messageSearchUpdates.event;
  seen.dispose();
  await first.dispose();
  await post("ws-q2", "general", "bob", "quagga two");
  const again = client(config.alice);
  const resumed = watch(again, SEARCH, { query: "quagga", after: last });
  await until(() => resumed.next.length >= 1);
  await sleep(500);
  out.resume = { first: keys(seen), resumed: keys(resumed) };
  resumed.dispose();
  await again.dispose();
}

// Keep-alive: graphql-ws's pings are answered and the connection stays up.
{
  let pongs = 0;
  const alive = client(config.alice, { keepAlive: 200, on: { pong: () => { pongs += 1; } } });
  const seen = watch(alive, SEARCH, { query: "okapi" });
  await sleep(1500);
  await post("ws-okapi", "general", "bob", "okapi after the pings");
  await until(() => seen.next.length >= 1);
  out.keepAlive = { pongs, after: keys(seen), errors: seen.errors };
  seen.dispose();
  await alive.dispose();
}

console.log(JSON.stringify(out));
process.exit(0);
