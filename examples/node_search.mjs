#!/usr/bin/env node
// Search Recall's messageSearch as a person, following the cursor across pages (urql core).
//
//   npm ci --prefix examples/node        # once: installs @urql/core from examples/node's lock file
//   RECALL_TOKEN=rcm_... node examples/node_search.mjs "postgres migration" --first 5
//
// Environment: RECALL_URL (default http://127.0.0.1:8000/graphql) and RECALL_TOKEN, a member
// token (`recall serve --demo` prints one). Node 18+ (global fetch). Exit status: 0 on success,
// 1 on a GraphQL or network error (its code is printed), 2 on bad usage.

import { createRequire } from "node:module";
import { parseArgs } from "node:util";

// The dependencies live in examples/node/ (package.json and its lock file), next to this file.
const require = createRequire(new URL("./node/package.json", import.meta.url));
const { Client, fetchExchange, gql } = require("@urql/core");

const SEARCH = gql`
  query Search($query: String!, $first: Int, $after: String, $since: DateTime, $until: DateTime) {
    messageSearch(query: $query, first: $first, after: $after, since: $since, until: $until) {
      edges {
        node {
          key body createdAt
          scope { kind name parent { name } }
          author { __typename ... on Member { name } ... on Agent { name } ... on DeletedAgent { name } }
        }
        highlights { start end }
      }
      pageInfo { hasNextPage endCursor }
      candidateBudgetExhausted
    }
  }
`;

// Highlight ranges are UTF-16 code units: exactly JavaScript string indices.
function marked(body, highlights) {
  let out = "";
  let at = 0;
  for (const { start, end } of highlights) {
    out += body.slice(at, start) + "«" + body.slice(start, end) + "»";
    at = end;
  }
  return out + body.slice(at);
}

function where(scope) {
  if (scope.kind === "thread") return `thread in #${scope.parent?.name ?? "dm"}`;
  return scope.name ? `#${scope.name}` : "DM";
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    first: { type: "string", default: "10" },
    "max-pages": { type: "string", default: "10" },
    since: { type: "string" },
    until: { type: "string" },
    token: { type: "string", default: process.env.RECALL_TOKEN },
    url: { type: "string", default: process.env.RECALL_URL ?? "http://127.0.0.1:8000/graphql" },
  },
});
if (positionals.length !== 1 || !values.token) {
  console.error("usage: RECALL_TOKEN=rcm_... node node_search.mjs QUERY [--first N] [--max-pages N] [--since T] [--until T]");
  process.exit(2);
}

const client = new Client({
  url: values.url,
  exchanges: [fetchExchange],
  // POST every request (urql would otherwise send short queries as GET).
  preferGetMethod: false,
  requestPolicy: "network-only",
  fetchOptions: { headers: { authorization: `Bearer ${values.token}` } },
});

const variables = { query: positionals[0], first: Number(values.first) };
if (values.since) variables.since = values.since;
if (values.until) variables.until = values.until;

let after = null;
let hits = 0;
let pages = 0;
while (pages < Number(values["max-pages"])) {
  const result = await client.query(SEARCH, { ...variables, after }).toPromise();
  if (result.error) {
    for (const e of result.error.graphQLErrors) {
      console.error(`error ${e.extensions?.code}: ${e.message}`);
    }
    if (result.error.networkError) {
      console.error(`error: ${result.error.networkError.message} (${values.url})`);
    }
    process.exit(1);
  }
  const search = result.data.messageSearch;
  pages += 1;
  const note = search.candidateBudgetExhausted ? " (candidate budget exhausted; continuing)" : "";
  console.log(`page ${pages}: ${search.edges.length} hits${note}`);
  for (const { node, highlights } of search.edges) {
    hits += 1;
    console.log(`[${node.key}] ${node.createdAt} ${where(node.scope)} ${node.author.name}: ${marked(node.body, highlights)}`);
  }
  // An empty page with hasNextPage is not the end: keep following endCursor.
  if (!search.pageInfo.hasNextPage) break;
  after = search.pageInfo.endCursor;
}
console.log(`${hits} hits in ${pages} pages`);
