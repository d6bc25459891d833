// GraphQL over HTTP to this server's /graphql, and the member token kept in sessionStorage.

const TOKEN_KEY = "recall.token";

/** The server refused the token (HTTP 401): missing, unknown, expired or revoked. */
export class AuthError extends Error {}
/** The request did not reach Recall, or its answer was not GraphQL. */
export class NetworkError extends Error {}
/** A GraphQL error, with its extensions.code (SEARCH_UNAVAILABLE, BAD_USER_INPUT, ...). */
export class ApiError extends Error {
  constructor(message, code) {
    super(message);
    this.code = code;
  }
}

export function storedToken() {
  try {
    return window.sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

export function storeToken(token) {
  if (token) window.sessionStorage.setItem(TOKEN_KEY, token);
  else window.sessionStorage.removeItem(TOKEN_KEY);
}

/** Signing out: the token, and everything Recall's pages keep in this browser (GraphiQL's
 * editors and tabs live in localStorage under "recall:" keys). */
export function forgetEverything() {
  try {
    window.sessionStorage.removeItem(TOKEN_KEY);
    for (const key of Object.keys(window.localStorage)) {
      if (key.startsWith("recall:")) window.localStorage.removeItem(key);
    }
  } catch {
    // Storage disabled: nothing was kept.
  }
}

export async function gql(token, query, variables = {}, signal = undefined) {
  let response;
  try {
    response = await fetch("/graphql", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/graphql-response+json, application/json",
        authorization: `Bearer ${token}`,
      },
      body: JSON.stringify({ query, variables }),
      signal,
      credentials: "omit",
      cache: "no-store",
    });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new NetworkError("Could not reach Recall.");
  }
  if (response.status === 401) throw new AuthError("The token was not accepted.");
  let body;
  try {
    body = await response.json();
  } catch {
    throw new NetworkError(`Recall answered HTTP ${response.status}.`);
  }
  const first = body.errors && body.errors[0];
  if (first) throw new ApiError(first.message, first.extensions && first.extensions.code);
  if (!response.ok || !body.data) throw new NetworkError(`Recall answered HTTP ${response.status}.`);
  return body.data;
}

const MESSAGE_HEAD = `
  id key createdAt
  author {
    __typename
    ... on Member { id key name }
    ... on Agent { id key name }
    ... on DeletedAgent { id name }
  }`;
const MESSAGE = `${MESSAGE_HEAD} body`;
const SCOPE = "id key kind name visibility parent { id key name }";

// The viewer's identity links come along so that the top bar can say when one waits for the
// viewer's approval (Linked accounts).
export const VIEWER = `query RecallViewer {
  viewer {
    member { id key name identityLinks { id status members { id } } }
    workspace {
      id key name
      scopes { ${SCOPE} }
      members { id key name }
      agents { id key name owner { id key name } }
    }
  }
}`;

// How the server read the query: its operators, whether each matched anything the viewer may
// see, and what (people, agents, conversations): the tab's chips and pickers show it. (A
// person's name is `actorName`: Scope.name is nullable, Member.name is not.)
const INTERPRETATION = `interpretation {
      text
      operators {
        name value negated known
        matches {
          __typename id
          ... on Member { key actorName: name }
          ... on Agent { key actorName: name }
          ... on Scope { ${SCOPE} }
        }
      }
    }`;

const HIT = `cursor highlights { start end }
      excerpt { text start end moreBefore moreAfter highlights { start end } }
      node { ${MESSAGE_HEAD} scope { ${SCOPE} } }`;

/** The search: the query as typed (operators and all) and the browser's time zone, which
 * date-only operators (`since:2026-03-01`) are read in. The first page also asks for the live
 * log's position read before it (`live`), where the tab's subscription starts (docs/live.md). */
export const SEARCH = `query RecallSearch($query: String!, $timeZone: String!, $first: Int, $after: String, $live: Boolean! = false) {
  messageSearch(query: $query, timeZone: $timeZone, first: $first, after: $after) {
    edges { ${HIT} }
    pageInfo { hasNextPage endCursor }
    candidateBudgetExhausted
    liveEvent @include(if: $live)
    ${INTERPRETATION}
  }
}`;

/** The same search's new, edited and removed hits, from `after` (live.js resumes it). */
export const SEARCH_UPDATES = `subscription RecallSearchUpdates($query: String!, $timeZone: String!, $after: String) {
  messageSearchUpdates(query: $query, timeZone: $timeZone, after: $after) {
    event kind removedId
    edge { ${HIT} }
  }
}`;

// A conversation's page; the first one also asks for the live log's position read before it.
export const CONVERSATION = `query RecallConversation(
  $scope: ID!, $around: ID, $first: Int, $last: Int, $after: String, $before: String, $live: Boolean! = false
) {
  node(id: $scope) {
    ... on Scope {
      ${SCOPE}
      messages(around: $around, first: $first, last: $last, after: $after, before: $before) {
        edges { cursor node { ${MESSAGE} seq } }
        pageInfo { hasNextPage endCursor hasPreviousPage startCursor }
        liveEvent @include(if: $live)
      }
    }
  }
}`;

/** The open conversation's new, edited and removed messages, from `after`. */
export const SCOPE_UPDATES = `subscription RecallScopeUpdates($scopeId: ID!, $after: String) {
  scopeMessages(scopeId: $scopeId, after: $after) {
    event kind removedId
    message { ${MESSAGE} seq }
  }
}`;

// Linked identities (docs/identity.md): the viewer's own links (pending, live, revoked, expired)
// and the flow that makes one (a code started here, confirmed with the other identity's token,
// then approved here: the starter names the identity that confirmed it).
const LINK = "id status verifiedAt approvedAt approveBefore revokedAt members { id key name namespace }";

export const LINKS = `query RecallLinks {
  viewer { member { id key name namespace identityLinks { ${LINK} } } }
}`;

export const START_LINK = `mutation RecallStartLink { startIdentityLink { code expiresAt } }`;

// Whom a code links to, shown before it is confirmed (nobody links themselves to a stranger).
export const PREVIEW_LINK = `query RecallPreviewLink($code: String!) {
  identityLinkCode(code: $code) { expiresAt starter { id key name namespace } }
}`;

export const CONFIRM_LINK = `mutation RecallConfirmLink($code: String!) {
  confirmIdentityLink(code: $code) { ${LINK} }
}`;

export const APPROVE_LINK = `mutation RecallApproveLink($id: ID!) {
  approveIdentityLink(id: $id) { ${LINK} }
}`;

export const REVOKE_LINK = `mutation RecallRevokeLink($id: ID!) {
  revokeIdentityLink(id: $id) { ${LINK} }
}`;
