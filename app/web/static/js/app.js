// The Messages tab: sign in with a member token, search (messageSearch), filter, page, and open
// a hit in its conversation (Scope.messages(around:)); both update live (live.js: the
// messageSearchUpdates and scopeMessages subscriptions, docs/live.md). Preact + htm, vendored
// (static/vendor).
import { h, render } from "../vendor/preact/preact.js";
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "../vendor/preact/hooks.js";
import htm from "../vendor/htm/htm.js";
import {
  ApiError,
  AuthError,
  APPROVE_LINK,
  CONFIRM_LINK,
  PREVIEW_LINK,
  CONVERSATION,
  forgetEverything,
  gql,
  LINKS,
  NetworkError,
  REVOKE_LINK,
  SCOPE_UPDATES,
  SEARCH,
  SEARCH_UPDATES,
  START_LINK,
  storedToken,
  storeToken,
  VIEWER,
} from "./api.js";
import {
  append,
  cut,
  formatOperator,
  incomplete,
  insertValue,
  operators,
  removeOperator,
  replaceOperators,
  valueAtCaret,
  without,
} from "./query.js";
import { LiveConnection } from "./live.js";
import { authorName, plainLabel, readState, reveal, scopeLabel, segments, stateHash, when, writeState } from "./text.js";

const html = htm.bind(h);
const PAGE = 20;
// Budget-exhausted pages fetched in a row by themselves before the page asks to keep going.
const AUTO_CONTINUE = 25;
const DEBOUNCE_MS = 250;
const AROUND = 15;
const MORE_ROWS = 20;
const EXAMPLES = ["postgres migration", '"rollback plan"', "ERR_CONN_RESET -mysql", "from:me", "数据库迁移"];
const SUGGESTIONS = 8;
// While a code waits for the other identity, or a link for its starter's approval, the panel
// looks for the change this often.
const LINK_POLL_MS = 2000;
// The browser's zone: date-only operators (`since:2026-03-01`) mean this zone's days.
const TIME_ZONE = (() => {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  } catch {
    return "UTC";
  }
})();

// A sign-in link (`#token=…`, printed by `recall serve --demo`): taken out of the address bar
// before anything else runs. Signed out, it signs that person in (the token kept in this tab's
// sessionStorage). Signed in as someone else, it only asks: a link anyone can send must not
// silently switch the page to whoever minted it (login CSRF).
function takeTokenFromUrl() {
  const { state, token } = readState();
  if (!token) return { state, token: "", switchTo: "" };
  writeState(state, { push: false });
  const current = storedToken();
  if (current && current !== token) return { state, token: "", switchTo: token };
  storeToken(token);
  return { state, token, switchTo: "" };
}

const SIGNED_OUT = {
  expired: "Recall did not accept the token: it may have expired, been revoked or mistyped. Sign in again.",
  notMember: "That is not a member token (rcm_…). Agent and connector tokens cannot search messages.",
  signedOut: "You are signed out.",
};

function App() {
  const [fromLink] = useState(() => takeTokenFromUrl());
  const initial = fromLink.state;
  const [token, setToken] = useState(() => storedToken());
  const [switchTo, setSwitchTo] = useState(fromLink.switchTo);
  const [notice, setNotice] = useState("");
  const [viewer, setViewer] = useState(null);
  const [viewerError, setViewerError] = useState(null);
  const [retryViewer, setRetryViewer] = useState(0);
  const [url, setUrl] = useState(initial);
  const [linksOpen, setLinksOpen] = useState(false);
  const urlRef = useRef(url);
  urlRef.current = url;
  const openedHere = useRef(false);

  const signOut = useCallback((why) => {
    forgetEverything();
    setToken(null);
    setViewer(null);
    setLinksOpen(false);
    setNotice(why || "");
  }, []);
  const onAuthError = useCallback(() => signOut(SIGNED_OUT.expired), [signOut]);
  const authErrorRef = useRef(onAuthError);
  authErrorRef.current = onAuthError;

  // One live connection per token, shared by the search and the conversation; its status is
  // shown while something is subscribed.
  const [liveStatus, setLiveStatus] = useState("idle");
  const live = useMemo(
    () => (token ? new LiveConnection(token, { onStatus: setLiveStatus, onAuthError: () => authErrorRef.current() }) : null),
    [token]
  );
  useEffect(() => () => live && live.close(), [live]);

  const navigate = useCallback((patch, { push }) => {
    const next = { ...urlRef.current, ...patch };
    if (stateHash(next) === stateHash(urlRef.current)) return;
    writeState(next, { push });
    urlRef.current = next;
    setUrl(next);
  }, []);

  // Back/forward, a pasted link, or a sign-in link opened in this tab.
  useEffect(() => {
    const sync = () => {
      const { state, token: fromLink, switchTo: other } = takeTokenFromUrl();
      if (fromLink) {
        setNotice("");
        setToken(fromLink);
      }
      if (other) setSwitchTo(other);
      if (stateHash(state) !== stateHash(urlRef.current)) {
        openedHere.current = false;
        urlRef.current = state;
        setUrl(state);
      }
    };
    window.addEventListener("hashchange", sync);
    window.addEventListener("popstate", sync);
    return () => {
      window.removeEventListener("hashchange", sync);
      window.removeEventListener("popstate", sync);
    };
  }, []);

  useEffect(() => {
    if (!token) return undefined;
    const controller = new AbortController();
    setViewer(null);
    setViewerError(null);
    gql(token, VIEWER, {}, controller.signal)
      .then((data) => {
        if (!data.viewer.member) return signOut(SIGNED_OUT.notMember);
        setViewer(data.viewer);
        return undefined;
      })
      .catch((error) => {
        if (error.name === "AbortError") return;
        if (error instanceof AuthError) onAuthError();
        else setViewerError(error);
      });
    return () => controller.abort();
  }, [token, retryViewer, signOut, onAuthError]);

  useEffect(() => {
    document.title = url.q ? `${url.q} · Recall` : "Messages · Recall";
  }, [url.q]);

  if (!token) {
    return html`<${SignIn} notice=${notice} onToken=${(t) => {
      storeToken(t);
      setNotice("");
      setToken(t);
    }} />`;
  }
  if (viewerError) {
    return html`<main class="center"><${ErrorBox} error=${viewerError} onRetry=${() => setRetryViewer((n) => n + 1)} /></main>`;
  }
  if (!viewer) return html`<main class="center"><p class="status" role="status">Loading your workspace…</p></main>`;

  const open = url.open && url.in ? { messageId: url.open, scopeId: url.in } : null;
  const openResult = (edge) => {
    openedHere.current = true;
    navigate({ open: edge.node.id, in: edge.node.scope.id }, { push: true });
  };
  const closeConversation = () => {
    const id = urlRef.current.open;
    if (openedHere.current) {
      openedHere.current = false;
      window.history.back();
    } else {
      navigate({ open: "", in: "" }, { push: true });
    }
    window.setTimeout(() => {
      const link = document.querySelector(`.result[data-message-id="${CSS.escape(id)}"]`);
      if (link) link.focus();
    }, 50);
  };

  const switching =
    switchTo &&
    html`<${SwitchAccount}
      viewer=${viewer}
      token=${switchTo}
      onSwitch=${() => {
        forgetEverything();
        storeToken(switchTo);
        setSwitchTo("");
        setToken(switchTo);
      }}
      onStay=${() => setSwitchTo("")}
    />`;
  return html`
    <${Header}
      viewer=${viewer}
      linksOpen=${linksOpen}
      onLinks=${() => setLinksOpen((v) => !v)}
      onSignOut=${() => signOut(SIGNED_OUT.signedOut)}
    />
    ${switching}
    <${LiveStatus} status=${liveStatus} />
    ${linksOpen &&
    html`<${LinkedAccounts}
      token=${token}
      viewer=${viewer}
      onAuthError=${onAuthError}
      onLoaded=${(items) => setViewer((v) => v && { ...v, member: { ...v.member, identityLinks: items } })}
      onClose=${() => {
        setLinksOpen(false);
        window.setTimeout(() => document.getElementById("links-toggle")?.focus(), 0);
      }}
    />`}
    <main class=${open ? "layout has-conversation" : "layout"}>
      <${SearchColumn}
        token=${token}
        live=${live}
        viewer=${viewer}
        url=${url}
        navigate=${navigate}
        onAuthError=${onAuthError}
        onOpen=${openResult}
        openId=${open && open.messageId}
      />
      ${open &&
      html`<${Conversation}
        key=${open.messageId}
        token=${token}
        live=${live}
        scopeId=${open.scopeId}
        messageId=${open.messageId}
        onClose=${closeConversation}
        onAuthError=${onAuthError}
      />`}
    </main>
  `;
}

// The live connection's state, in words, while it matters: lost (updates wait until it is back,
// then whatever was missed arrives) and, for a moment, back.
function LiveStatus({ status }) {
  const [back, setBack] = useState(false);
  const was = useRef(status);
  useEffect(() => {
    const before = was.current;
    was.current = status;
    if (status === "reconnecting") setBack(false);
    if (before !== "reconnecting" || status !== "live") return undefined;
    setBack(true);
    const timer = window.setTimeout(() => setBack(false), 4000);
    return () => window.clearTimeout(timer);
  }, [status]);
  let text = "";
  if (status === "reconnecting") text = "Connection lost. Reconnecting…";
  else if (back && status === "live") text = "Reconnected. Live updates resumed.";
  return html`<p class=${text ? "live-status shown" : "live-status"} role="status" data-testid="live-status" data-state=${status}>
    ${status === "reconnecting" && html`<span class="spinner" aria-hidden="true"></span> `}${text}
  </p>`;
}

function SignIn({ notice, onToken }) {
  const [value, setValue] = useState("");
  const input = useRef();
  useEffect(() => input.current && input.current.focus(), []);
  const submit = (event) => {
    event.preventDefault();
    const token = value.trim().replace(/^Bearer\s+/i, "");
    if (token) onToken(token);
  };
  return html`
    <main class="center">
      <form class="card signin" onSubmit=${submit} aria-labelledby="signin-title">
        <h1 id="signin-title"><span class="logo" aria-hidden="true">R</span> Sign in to Recall</h1>
        ${notice && html`<p class="notice" role="alert">${notice}</p>`}
        <label for="token">Member token</label>
        <input
          id="token"
          ref=${input}
          type="password"
          autocomplete="off"
          spellcheck="false"
          placeholder="rcm_…"
          value=${value}
          onInput=${(e) => setValue(e.currentTarget.value)}
          aria-describedby="token-help"
        />
        <button type="submit" class="primary" disabled=${!value.trim()}>Sign in</button>
        <div id="token-help" class="help">
          <p>Paste the token you were given, or mint one with <code>recall token member WORKSPACE KEY</code>.</p>
          <p><code>recall serve --demo</code> prints a link that signs the demo person in.</p>
          <p>The token stays in this browser tab (session storage) and is sent only to this server.</p>
        </div>
      </form>
    </main>
  `;
}

function Header({ viewer, linksOpen, onLinks, onSignOut }) {
  const waiting = waitingForApproval(viewer);
  const who = `${plainLabel(viewer.member.name, 200)} (${viewer.member.key}) in ${plainLabel(viewer.workspace.name, 200)}`;
  return html`
    <header class="topbar">
      <a class="brand" href="/" aria-label="Recall"><span class="logo" aria-hidden="true">R</span><span class="brand-text"> Recall</span></a>
      <nav aria-label="Sections">
        <a href="/" aria-current="page">Messages</a>
        <a href="/graphql">GraphiQL</a>
      </nav>
      <div class="who" data-signed-in=${viewer.member.key}>
        <span class="who-name" title=${`Signed in as ${who}`}>
          <span class="who-label">Signed in as </span><${Name} text=${viewer.member.name} />${" · "}<${Name} text=${viewer.workspace.name} />
        </span>
        <button
          type="button"
          id="links-toggle"
          class="link"
          aria-expanded=${linksOpen ? "true" : "false"}
          aria-controls="linked-accounts"
          aria-label="Linked accounts"
          aria-describedby=${waiting ? "links-waiting" : undefined}
          onClick=${onLinks}
        >
          Linked<span class="wide-only"> accounts</span>
          ${waiting > 0 && html` <span class="links-waiting" id="links-waiting">${waiting} to approve</span>`}
        </button>
        <button type="button" class="link" onClick=${onSignOut}>Sign out</button>
      </div>
    </header>
  `;
}

// Asked when a sign-in link for another token arrives while someone is signed in: whose link
// it is (read with that token), who is signed in, and nothing changes until the person says so.
function SwitchAccount({ viewer, token, onSwitch, onStay }) {
  const [other, setOther] = useState({ status: "loading" });
  const stay = useRef();
  useEffect(() => {
    const controller = new AbortController();
    gql(token, VIEWER, {}, controller.signal)
      .then((data) => setOther(data.viewer.member ? { status: "ready", viewer: data.viewer } : { status: "invalid" }))
      .catch((error) => error.name !== "AbortError" && setOther({ status: "invalid" }));
    return () => controller.abort();
  }, [token]);
  useEffect(() => stay.current && stay.current.focus(), [other.status]);
  const onKeyDown = (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      onStay();
    }
  };
  const current = html`<strong><${Name} text=${viewer.member.name} /></strong> (${viewer.member.key}) in <${Name} text=${viewer.workspace.name} />`;
  return html`
    <div class="switch" role="alertdialog" aria-labelledby="switch-title" aria-describedby="switch-text" onKeyDown=${onKeyDown}>
      <h2 id="switch-title">Switch accounts?</h2>
      ${other.status === "loading" && html`<p id="switch-text">Checking the sign-in link…</p>`}
      ${other.status === "invalid" &&
      html`<p id="switch-text">You opened a sign-in link whose token Recall does not accept as a member token. You are still signed in as ${current}.</p>`}
      ${other.status === "ready" &&
      html`<p id="switch-text">
        You opened a sign-in link for <strong><${Name} text=${other.viewer.member.name} /></strong> (${other.viewer.member.key}) in
        <${Name} text=${other.viewer.workspace.name} />. You are signed in as ${current}. Only switch if you meant to.
      </p>`}
      <div class="switch-actions">
        ${other.status === "ready" &&
        html`<button type="button" class="primary" onClick=${onSwitch}>Switch to ${plainLabel(other.viewer.member.name, 40)}</button>`}
        <button type="button" ref=${stay} onClick=${onStay}>Stay signed in as ${plainLabel(viewer.member.name, 40)}</button>
      </div>
    </div>
  `;
}

// Linked accounts (docs/identity.md): one person's identities in two namespaces (Slack and the
// web app, say) linked by a code started on one and confirmed on the other, then approved on
// the first — the starter sees who confirmed it (name, key, namespace), so a code read over a
// shoulder or phished links nobody. The viewer's links, pending, live, revoked and expired;
// either side may revoke, decline or withdraw.
function LinkedAccounts({ token, viewer, onClose, onAuthError, onLoaded }) {
  const [links, setLinks] = useState({ status: "loading", me: null, items: [], error: null });
  const [started, setStarted] = useState(null);
  const [code, setCode] = useState("");
  const [preview, setPreview] = useState(null);
  const [busy, setBusy] = useState("");
  const [problem, setProblem] = useState(null);
  const [notice, setNotice] = useState("");
  const [revoking, setRevoking] = useState("");
  const [, setTick] = useState(0);
  const heading = useRef();
  const loaded = useRef(onLoaded);
  loaded.current = onLoaded;

  const load = useCallback(
    async (signal) => {
      try {
        const data = await gql(token, LINKS, {}, signal);
        const me = data.viewer.member;
        setLinks({ status: "ready", me, items: me ? me.identityLinks : [], error: null });
        if (me && loaded.current) loaded.current(me.identityLinks);
        return me ? me.identityLinks : [];
      } catch (error) {
        if (error.name === "AbortError") return null;
        if (error instanceof AuthError) onAuthError();
        else setLinks((l) => ({ ...l, status: "error", error }));
        return null;
      }
    },
    [token, onAuthError]
  );
  useEffect(() => {
    const controller = new AbortController();
    load(controller.signal);
    if (heading.current) heading.current.focus();
    return () => controller.abort();
  }, [load]);

  // Something is on its way: a code waits for the other identity (look for the pending link it
  // makes, and say when the code expired), or a pending link waits for its starter (look for
  // it turning live, declined or expired). Each change is announced.
  const pendingIds = links.items.filter((l) => l.status === "PENDING").map((l) => l.id).join(" ");
  useEffect(() => {
    if (!started && !pendingIds) return undefined;
    const timer = window.setInterval(async () => {
      setTick((n) => n + 1);
      if (started && Date.parse(started.expiresAt) <= Date.now() && !pendingIds) return;
      const items = await load();
      if (!items) return;
      const made = started && items.find((l) => l.status === "PENDING" && !started.before.has(l.id));
      if (made) {
        setStarted(null);
        setNotice(`${describe(other(made, viewer))} confirmed your code. Approve it below only if that is you.`);
      }
      for (const id of pendingIds.split(" ")) {
        const now = items.find((l) => l.id === id);
        if (now && now.status === "LIVE") setNotice(`Linked to ${describe(other(now, viewer))}.`);
        else if (now && now.status !== "PENDING") setNotice(`The link with ${describe(other(now, viewer))} was not approved.`);
      }
    }, LINK_POLL_MS);
    return () => window.clearInterval(timer);
  }, [started, pendingIds, load]);

  const run = async (what, doc, variables, after) => {
    setBusy(what);
    setProblem(null);
    setNotice("");
    try {
      const data = await gql(token, doc, variables);
      await after(data);
    } catch (error) {
      if (error instanceof AuthError) onAuthError();
      else setProblem({ what, error });
    } finally {
      setBusy("");
    }
  };
  const start = () =>
    run("start", START_LINK, {}, async (data) => {
      const before = new Set(links.items.map((l) => l.id));
      setStarted({ ...data.startIdentityLink, before });
    });
  // Confirming is two steps: whom the code links to is shown first (a code someone else
  // handed you would link you to them), and only an explicit yes confirms it. The link is then
  // pending until the identity that started the code approves this one.
  const confirm = (event) => {
    event.preventDefault();
    if (!code.trim()) return;
    const typed = code.trim();
    run("confirm", PREVIEW_LINK, { code: typed }, async (data) => {
      setPreview({ code: typed, ...data.identityLinkCode });
    });
  };
  const accept = () =>
    run("confirm", CONFIRM_LINK, { code: preview.code }, async (data) => {
      setPreview(null);
      setCode("");
      const them = describe(other(data.confirmIdentityLink, viewer));
      setNotice(`Confirmed. Now approve it as ${them}: the link is live once that identity approves this one.`);
      await load();
    });
  const approve = (link) =>
    run("approve", APPROVE_LINK, { id: link.id }, async () => {
      setNotice(`Linked to ${describe(other(link, viewer))}.`);
      await load();
    });
  const revoke = (link, done) =>
    run("revoke", REVOKE_LINK, { id: link.id }, async () => {
      setRevoking("");
      setNotice(`The link with ${describe(other(link, viewer))} is ${done}.`);
      await load();
    });
  const onKeyDown = (event) => {
    if (event.key === "Escape" && !revoking) {
      event.preventDefault();
      onClose();
    }
  };

  const me = links.me || viewer.member;
  const expired = started && Date.parse(started.expiresAt) <= Date.now();
  const count = (status) => links.items.filter((l) => l.status === status).length;
  const refused = {
    start: "The code could not be started",
    confirm: "That code was not accepted",
    approve: "The link could not be approved",
    revoke: "The link could not be changed",
  };
  return html`
    <section id="linked-accounts" class="linked" aria-labelledby="links-title" onKeyDown=${onKeyDown}>
      <header class="linked-head">
        <h2 id="links-title" tabindex="-1" ref=${heading}>Linked accounts</h2>
        <button type="button" class="back" onClick=${onClose} aria-label="Close linked accounts">Close</button>
      </header>
      <p class="linked-intro">
        You are <strong><${Name} text=${me.name} /></strong> (${me.key}${me.namespace ? html`, <code>${me.namespace}</code>` : ""}).
        If you are also someone else here — on Slack and on the web app, say — link the two: what only you could read as one
        identity (your DM with an agent, a private channel only you are in) can then be found as the other. Conversations
        with other people never follow a link.
      </p>
      ${notice && html`<p class="linked-notice" role="status">${notice}</p>`}
      <div class="linked-steps">
        <div class="linked-step">
          <h3>Link from here</h3>
          <p>Start a code, enter it while signed in as your other identity, then approve that identity here.</p>
          <button type="button" class="primary" onClick=${start} disabled=${busy === "start"}>
            ${started ? "Start a new code" : "Start a link"}
          </button>
          ${started &&
          html`<div class="link-code" data-expired=${expired ? "true" : "false"}>
            <p>Your code: <output class="code-text" aria-label="Your link code">${started.code}</output></p>
            <p>
              ${expired ? "It expired at " : "Single use; it expires at "}<${Time} iso=${started.expiresAt} />${expired
                ? ": start a new one."
                : ` (in ${Math.max(1, Math.ceil((Date.parse(started.expiresAt) - Date.now()) / 60000))} min). Starting a new code cancels this one.`}
            </p>
            ${!expired && html`<p class="status"><span class="spinner" aria-hidden="true"></span> Waiting for your other identity to confirm it…</p>`}
          </div>`}
          ${problem && problem.what === "start" && html`<${ErrorBox} error=${problem.error} refused=${refused.start} />`}
        </div>
        <form class="linked-step" onSubmit=${confirm}>
          <h3>Confirm a code</h3>
          <label for="link-code">Code from your other identity</label>
          <div class="code-row">
            <input
              id="link-code"
              autocomplete="off"
              spellcheck="false"
              autocapitalize="characters"
              value=${code}
              onInput=${(e) => { setCode(e.currentTarget.value); setPreview(null); }}
            />
            <button type="submit" class="primary" disabled=${!code.trim() || busy === "confirm"}>Confirm link</button>
          </div>
          ${preview &&
          html`<div class="link-preview" role="group" aria-labelledby="link-preview-text">
            <p id="link-preview-text">
              This code was started by <strong>${describe(preview.starter)}</strong>. Link only if that is you too:
              what only one of you can read will follow the other, once that identity approves this one.
            </p>
            <button type="button" class="primary" onClick=${accept} disabled=${busy === "confirm"}>Yes, link them</button>
            <button type="button" onClick=${() => setPreview(null)}>Cancel</button>
          </div>`}
          ${problem && problem.what === "confirm" && html`<${ErrorBox} error=${problem.error} refused=${refused.confirm} />`}
        </form>
      </div>
      <h3>Your links</h3>
      ${links.status === "loading" && html`<p class="status" role="status">Loading your links…</p>`}
      ${links.status === "error" && html`<${ErrorBox} error=${links.error} onRetry=${() => load()} />`}
      ${links.status === "ready" && links.items.length === 0 && html`<p class="status">No linked accounts yet.</p>`}
      ${problem && (problem.what === "revoke" || problem.what === "approve") && html`<${ErrorBox} error=${problem.error} refused=${refused[problem.what]} />`}
      ${links.items.length > 0 &&
      html`<ul class="link-list" aria-label=${`${count("PENDING")} pending, ${count("LIVE")} live, ${links.items.length - count("PENDING") - count("LIVE")} ended`}>
        ${[...links.items].sort((a, b) => (a.status === "PENDING" ? 0 : 1) - (b.status === "PENDING" ? 0 : 1)).map(
          (link) => html`<${LinkRow}
            key=${link.id}
            link=${link}
            viewer=${viewer}
            busy=${busy}
            revoking=${revoking === link.id}
            onAsk=${() => setRevoking(link.id)}
            onKeep=${() => setRevoking("")}
            onApprove=${() => approve(link)}
            onRevoke=${(done) => revoke(link, done)}
          />`
        )}
      </ul>`}
    </section>
  `;
}

// One link in the list. A pending link is the starter's to approve or decline: it shows the
// identity that confirmed the code by name, key and namespace, since that — not the code —
// is what the starter vouches for. To the confirmer it waits, and can be withdrawn.
function LinkRow({ link, viewer, busy, revoking, onAsk, onKeep, onApprove, onRevoke }) {
  const them = other(link, viewer);
  const who = describe(them);
  const mine = link.members[0] && link.members[0].id === viewer.member.id;
  const ended = link.status === "REVOKED" || link.status === "EXPIRED";
  let state;
  if (link.status === "PENDING") state = html`<span class="link-state pending">${mine ? "Waiting for your approval" : "Waiting for approval"}</span>`;
  else if (link.status === "LIVE") state = html`<span class="link-state live">Live</span>`;
  else if (link.status === "EXPIRED") state = html`<span class="link-state revoked">Expired unapproved</span>`;
  else state = html`<span class="link-state revoked">${link.approvedAt ? "Revoked" : "Declined"} <${Time} iso=${link.revokedAt} /></span>`;
  return html`<li class=${`link-row${ended ? " revoked" : ""}${link.status === "PENDING" ? " pending" : ""}`} data-link-id=${link.id} data-status=${link.status}>
    <span class="link-who"><strong><${Name} text=${them.name} /></strong> <span class="link-ns">${them.key} · <code>${them.namespace}</code></span></span>
    <span class="link-when">${link.approvedAt ? html`Linked <${Time} iso=${link.approvedAt} />` : html`Confirmed <${Time} iso=${link.verifiedAt} />`}</span>
    ${state}
    ${link.status === "PENDING" && mine &&
    html`<span class="link-approve" role="group" aria-label=${`Approve the link with ${who}?`}>
      <span class="link-approve-text">${who} confirmed your code. Approve only if that is you; until then it opens nothing.${link.approveBefore ? html` Approve before <${Time} iso=${link.approveBefore} />.` : ""}</span>
      <button type="button" class="primary" aria-label=${`Approve the link with ${who}`} onClick=${onApprove} disabled=${busy === "approve"}>Approve</button>
      <button type="button" class="danger" aria-label=${`Decline the link with ${who}`} onClick=${() => onRevoke("declined")} disabled=${busy === "revoke"}>Decline</button>
    </span>`}
    ${link.status === "PENDING" && !mine &&
    html`<button type="button" class="link" aria-label=${`Withdraw the link with ${who}`} onClick=${() => onRevoke("withdrawn")} disabled=${busy === "revoke"}>Withdraw</button>`}
    ${link.status === "LIVE" && !revoking &&
    html`<button type="button" class="link" aria-label=${`Revoke the link with ${who}`} onClick=${onAsk}>Revoke</button>`}
    ${link.status === "LIVE" && revoking &&
    html`<span class="link-confirm" role="group" aria-label=${`Revoke the link with ${who}?`}>
      Revoke it? It stops from the next request on.
      <button type="button" class="danger" onClick=${() => onRevoke("revoked")} disabled=${busy === "revoke"}>Revoke link</button>
      <button type="button" class="link" onClick=${onKeep}>Keep it</button>
    </span>`}
  </li>`;
}

/** How many links wait for the viewer's approval: pending ones the viewer started. */
function waitingForApproval(viewer) {
  const mine = (viewer.member.identityLinks || []).filter(
    (l) => l.status === "PENDING" && l.members[0] && l.members[0].id === viewer.member.id
  );
  return mine.length;
}

/** The other member of a link (links join exactly two). */
function other(link, viewer) {
  return link.members.find((m) => m.id !== viewer.member.id) || link.members[link.members.length - 1];
}

function describe(member) {
  return `${plainLabel(member.name, 60)} (${member.key}, ${member.namespace})`;
}

// Text from other people (bodies, names): isolated from the surrounding direction (<bdi>), and
// characters that would hide or reorder text shown as visible marks.
function Shown({ text }) {
  return reveal(text).map((p) =>
    p.hidden ? html`<span class="hidden-char" title=${`Hidden character ${p.hidden}`}>${p.hidden}</span>` : p.text
  );
}

function Name({ text }) {
  return html`<bdi class="name"><${Shown} text=${text} /></bdi>`;
}

// The people, agents and conversations the viewer may see (the pickers' lists), for suggestions
// and for reading operators before the server has answered.
function directoryOf(viewer) {
  const { scopes, members, agents } = viewer.workspace;
  const nameOf = uniqueNames(members);
  const owners = [...new Map(agents.map((a) => [a.owner.id, a.owner])).values()];
  return { me: viewer.member, scopes, members, agents, owners, nameOf };
}

// Who or where an operator names, read locally from the directory: an option value of the
// Author picker (`MEMBER:id`, `AGENT:id`, `MEMBER_AGENTS:id`) or the Channel picker (a scope
// id), or "" when this page cannot tell (the server's interpretation may).
function localOption(op, dir) {
  const v = op.value;
  const sigil = v[0] === "@" || v[0] === "#" ? v[0] : "";
  const bare = v.slice(sigil.length);
  const one = (list) => (list.length === 1 ? list[0] : null);
  // Keys and names both match regardless of case, as the server looks them up.
  const byKey = (list) => one(list.filter((x) => x.key.toLowerCase() === bare.toLowerCase()));
  const byName = (list) => one(list.filter((x) => x.name.toLowerCase() === bare.toLowerCase()));
  const actor = (list) => {
    if (sigil === "#") return null;
    if (!sigil && bare.toLowerCase() === "me") return dir.members.find((m) => m.id === dir.me.id) || dir.me;
    return byKey(list) || (sigil ? null : byName(list));
  };
  if (op.name === "from") {
    const found = actor([...dir.members, ...dir.agents]);
    if (!found) return "";
    return `${dir.agents.includes(found) ? "AGENT" : "MEMBER"}:${found.id}`;
  }
  if (op.name === "agents-of") {
    const found = actor(dir.members);
    return found && dir.owners.some((o) => o.id === found.id) ? `MEMBER_AGENTS:${found.id}` : "";
  }
  if (op.name === "in") {
    if (sigil === "@") return "";
    const channels = dir.scopes.filter((s) => s.kind === "channel");
    const found = sigil === "#" ? byKey(channels) || byName(channels) : byKey(dir.scopes);
    return found ? found.id : "";
  }
  return "";
}

// The same, from the server's interpretation of the operator (its matches).
function matchedOption(op, dir) {
  if (op.known === false || !op.matches || op.matches.length !== 1) return "";
  const node = op.matches[0];
  let value = "";
  if (op.name === "from") value = `${node.__typename === "Agent" ? "AGENT" : "MEMBER"}:${node.id}`;
  else if (op.name === "agents-of") value = `MEMBER_AGENTS:${node.id}`;
  else if (op.name === "in") value = node.id;
  const offered =
    op.name === "in"
      ? dir.scopes.some((s) => s.id === value)
      : [...dir.members.map((m) => `MEMBER:${m.id}`), ...dir.agents.map((a) => `AGENT:${a.id}`), ...dir.owners.map((o) => `MEMBER_AGENTS:${o.id}`)].includes(value);
  return offered ? value : "";
}

/** The operator a picker's option stands for: `from:@bob`, `agents-of:@alice`, `in:#general`. */
function operatorFor(option, dir) {
  const [kind, id] = option.split(":");
  if (kind === "MEMBER" || kind === "AGENT" || kind === "MEMBER_AGENTS") {
    const actor = (kind === "AGENT" ? dir.agents : dir.members).find((x) => x.id === id);
    if (!actor) return "";
    return formatOperator({ name: kind === "MEMBER_AGENTS" ? "agents-of" : "from", value: `@${actor.key}`, negated: false });
  }
  const scope = dir.scopes.find((s) => s.id === option);
  if (!scope) return "";
  return formatOperator({ name: "in", value: scope.kind === "channel" ? `#${scope.key}` : scope.key, negated: false });
}

/**
 * The operators in effect, one chip each: the server's interpretation once it has answered for
 * this very query (known, matches), else the query's own operators, still unresolved
 * (known: null). Each carries its token in the query, so removing it cuts exactly that text.
 */
function chipsFor(q, interpretation) {
  const tokens = operators(q);
  if (!interpretation || interpretation.query !== q) {
    return tokens.map((t) => ({ name: t.name, value: t.value, negated: t.negated, known: null, matches: [], token: t }));
  }
  let next = 0;
  return interpretation.operators.map((op) => {
    let j = next;
    const same = (t) => t.name === op.name && t.negated === op.negated && t.value.toLowerCase() === op.value.toLowerCase();
    while (j < tokens.length && !same(tokens[j])) j += 1;
    const token = j < tokens.length ? tokens[j] : null;
    if (token) next = j + 1;
    return { ...op, token };
  });
}

/** What a picker shows for the query's positive operators named `names`. */
function pickerValue(chips, names, dir) {
  const positive = chips.filter((c) => !c.negated && names.includes(c.name));
  if (positive.length === 0) return "";
  if (positive.length > 1) return "query";
  const chip = positive[0];
  const value = chip.known === null ? localOption(chip, dir) : matchedOption(chip, dir);
  return value || "query";
}

// Suggestions for the value being typed after `from:`, `agents-of:` or `in:`.
function suggestionsFor(at, dir) {
  const p = at.partial.toLowerCase();
  const rank = (...texts) => {
    const lower = texts.filter(Boolean).map((t) => t.toLowerCase());
    if (lower.some((t) => t.startsWith(p))) return 0;
    if (lower.some((t) => t.split(/[\s\-_.]+/).some((w) => w.startsWith(p)))) return 1;
    if (lower.some((t) => t.includes(p))) return 2;
    return -1;
  };
  const me = { id: "me", value: "me", label: "me", detail: `you, ${plainLabel(dir.me.name, 40)}`, group: "" };
  const people = dir.members.map((m) => ({ id: m.id, value: `@${m.key}`, label: dir.nameOf(m), detail: `@${m.key}`, key: m.key, name: m.name }));
  const agents = dir.agents.map((a) => ({
    id: a.id,
    value: `@${a.key}`,
    label: plainLabel(a.name),
    detail: `@${a.key} · agent of ${plainLabel(a.owner.name, 40)}`,
    key: a.key,
    name: a.name,
  }));
  let list = [];
  if (at.name === "from" && at.sigil !== "#") list = [...(at.sigil ? [] : [me]), ...people, ...agents];
  else if (at.name === "agents-of" && at.sigil !== "#") list = [...(at.sigil ? [] : [me]), ...people];
  else if (at.name === "in" && at.sigil === "@") {
    list = [...people, ...agents].map((x) => ({ ...x, detail: `your DM with ${x.label}` }));
  } else if (at.name === "in") {
    list = dir.scopes
      .filter((s) => (at.sigil === "#" ? s.kind === "channel" : true))
      .map((s) => ({
        id: s.id,
        value: s.kind === "channel" ? `#${s.key}` : s.key,
        label: plainLabel(scopeLabel(s)),
        detail: s.kind === "channel" ? (plainLabel(scopeLabel(s)).startsWith(`#${s.key}`) ? "" : `#${s.key}`) : s.key,
        key: s.key,
        name: s.name || "",
      }));
  }
  return list
    .map((x) => ({ ...x, rank: p === "" ? 0 : rank(x.key || x.value, x.name || x.label) }))
    .filter((x) => x.rank >= 0)
    .sort((a, b) => a.rank - b.rank)
    .slice(0, SUGGESTIONS);
}

function SearchColumn({ token, live, viewer, url, navigate, onAuthError, onOpen, openId }) {
  const [search, actions] = useSearch(token, live, url, onAuthError);
  const dir = useMemo(() => directoryOf(viewer), [viewer]);
  const chips = chipsFor(url.q, search.interpretation);

  // Links made before the pickers wrote operators (`#q=…&author=MEMBER:…&channel=…&since=…`):
  // the same filters, as operators in the query.
  useEffect(() => {
    if (!url.author && !url.channel && !url.since && !url.until) return;
    let q = url.q;
    for (const option of [url.author, url.channel]) {
      const op = option && operatorFor(option, dir);
      if (op) q = append(q, op);
    }
    if (url.since) q = append(q, `since:${url.since}`);
    if (url.until) q = append(q, `until:${url.until}`);
    navigate({ q, author: "", channel: "", since: "", until: "" }, { push: false });
  }, [url.author, url.channel, url.since, url.until]);

  return html`
    <div class="search-column">
      <${SearchForm} url=${url} navigate=${navigate} dir=${dir} chips=${chips} />
      <${Results} search=${search} actions=${actions} url=${url} chips=${chips} onOpen=${onOpen} openId=${openId} navigate=${navigate} />
    </div>
  `;
}

function SearchForm({ url, navigate, dir, chips }) {
  const [text, setText] = useState(url.q);
  const [suggest, setSuggest] = useState(null);
  const input = useRef();
  const timer = useRef(null);
  const lastTyped = useRef(0);
  // The query this form last put in the URL itself.
  const committed = useRef(url.q);
  // Back/forward, a link, a picker or a removed chip changed the query: show it. Not a change
  // this form made: the box already shows it, and what was typed since (the effect runs after
  // the next render, which a busy page may give a keystroke or two later) must stay.
  useEffect(() => {
    if (url.q === committed.current) return;
    committed.current = url.q;
    setText((current) => (current.trim() === url.q ? current : url.q));
  }, [url.q]);
  useEffect(() => () => window.clearTimeout(timer.current), []);

  const commit = (value, { now }) => {
    window.clearTimeout(timer.current);
    const apply = () => {
      // One history entry per pause in typing, not per keystroke.
      const push = Date.now() - lastTyped.current > 1500;
      lastTyped.current = Date.now();
      committed.current = value.trim();
      navigate({ q: value.trim(), open: "", in: "" }, { push });
    };
    if (now) apply();
    // `from:` without its value yet is still being typed: no search for it until Enter.
    else if (!incomplete(value)) timer.current = window.setTimeout(apply, DEBOUNCE_MS);
  };
  const refresh = (value, caret) => {
    const at = caret === null ? null : valueAtCaret(value, caret);
    const options = at ? suggestionsFor(at, dir) : [];
    setSuggest(options.length ? { at, options, active: 0 } : null);
  };
  const accept = (option) => {
    const { query, caret } = insertValue(text, suggest.at, option.value);
    setText(query);
    setSuggest(null);
    commit(query, { now: true });
    window.requestAnimationFrame(() => {
      const box = input.current;
      if (!box) return;
      box.focus();
      box.setSelectionRange(caret, caret);
    });
  };
  const onKeyDown = (event) => {
    if (suggest) {
      const n = suggest.options.length;
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const step = event.key === "ArrowDown" ? 1 : n - 1;
        setSuggest({ ...suggest, active: (suggest.active + step) % n });
        return;
      }
      if (event.key === "Enter" || (event.key === "Tab" && !event.shiftKey)) {
        event.preventDefault();
        accept(suggest.options[suggest.active]);
        return;
      }
      if (event.key === "Escape") {
        event.preventDefault();
        setSuggest(null);
        return;
      }
    }
    if (event.key === "Enter") {
      event.preventDefault();
      commit(text, { now: true });
    } else if (event.key === "ArrowDown") {
      const first = document.querySelector(".result");
      if (first) {
        event.preventDefault();
        first.focus();
      }
    }
  };
  const onCaret = (event) => {
    if (["ArrowLeft", "ArrowRight", "Home", "End"].includes(event.key) || event.type === "click") {
      refresh(event.currentTarget.value, event.currentTarget.selectionStart);
    }
  };
  const active = suggest ? `q-option-${suggest.active}` : undefined;
  return html`
    <form class="search" role="search" onSubmit=${(e) => e.preventDefault()}>
      <div class="search-box">
        <input
          ref=${input}
          type="search"
          id="q"
          role="combobox"
          aria-label="Search messages"
          aria-describedby="syntax"
          aria-autocomplete="list"
          aria-expanded=${suggest ? "true" : "false"}
          aria-controls="q-suggestions"
          aria-activedescendant=${active}
          placeholder="Search messages"
          autocomplete="off"
          spellcheck="false"
          value=${text}
          onInput=${(e) => {
            const value = e.currentTarget.value;
            setText(value);
            refresh(value, e.currentTarget.selectionStart);
            commit(value, { now: false });
          }}
          onKeyDown=${onKeyDown}
          onKeyUp=${onCaret}
          onClick=${onCaret}
          onBlur=${() => setSuggest(null)}
        />
        <ul id="q-suggestions" class="suggestions" role="listbox" aria-label="Suggestions" hidden=${!suggest}>
          ${suggest &&
          suggest.options.map(
            (o, i) => html`<li
              key=${`${o.id}-${o.value}`}
              id=${`q-option-${i}`}
              role="option"
              class=${i === suggest.active ? "suggestion active" : "suggestion"}
              aria-selected=${i === suggest.active ? "true" : "false"}
              onMouseDown=${(e) => e.preventDefault()}
              onMouseMove=${() => i !== suggest.active && setSuggest({ ...suggest, active: i })}
              onClick=${() => accept(o)}
            >
              <span class="suggestion-label"><${Name} text=${o.label} /></span>
              <span class="suggestion-detail">${o.detail}</span>
            </li>`
          )}
        </ul>
        <p class="visually-hidden" role="status" aria-live="polite">
          ${suggest ? `${suggest.options.length} suggestion${suggest.options.length === 1 ? "" : "s"}, arrow keys to choose, Enter to accept` : ""}
        </p>
      </div>
      <p id="syntax" class="syntax">
        <span><code>words</code> all must appear</span>
        <span><code>"exact phrase"</code></span>
        <span><code>-word</code> excludes</span>
        <span><code>from:@person</code> <code>agents-of:me</code> <code>in:#channel</code></span>
        <span><code>since:2026-03-01</code> <code>until:…</code> <code>on:…</code></span>
        <span><code>-from:…</code> <code>-in:…</code> exclude</span>
        <span>Chinese, Japanese and Korean work too</span>
      </p>
      <${Chips} q=${url.q} chips=${chips} navigate=${navigate} />
      <${Filters} url=${url} navigate=${navigate} dir=${dir} chips=${chips} />
    </form>
  `;
}

// The operators in effect, each removable: removing one cuts it out of the query as typed.
function Chips({ q, chips, navigate }) {
  const list = useRef();
  if (chips.length === 0) return null;
  const remove = (chip, index) => {
    const nth = chips.slice(0, index).filter((c) => c.name === chip.name && c.negated === chip.negated && c.value === chip.value).length;
    const next = chip.token ? cut(q, chip.token.start, chip.token.end) : removeOperator(q, chip, nth);
    navigate({ q: next, open: "", in: "" }, { push: true });
    // Focus stays in the row of chips (the next one), or goes back to the search box.
    window.setTimeout(() => {
      const buttons = list.current ? [...list.current.querySelectorAll("button")] : [];
      (buttons[Math.min(index, buttons.length - 1)] || document.getElementById("q")).focus();
    }, 0);
  };
  return html`
    <ul class="operators" aria-label="Filters in the query" ref=${list}>
      ${chips.map((chip, i) => {
        const typed = formatOperator(chip);
        const names = (chip.matches || []).map((m) => (m.__typename === "Scope" ? scopeLabel(m) : m.actorName));
        const shown = names.length > 3 ? `${names.slice(0, 3).join(", ")} +${names.length - 3}` : names.join(", ");
        const nothing = chip.known === false;
        const cls = ["op-chip", chip.negated && "negated", nothing && "unknown", chip.known === null && "pending"].filter(Boolean).join(" ");
        return html`<li key=${`${i}-${typed}`} class=${cls} data-operator=${chip.name} data-known=${chip.known === null ? "" : String(chip.known)}>
          <code class="op-typed"><${Shown} text=${typed} /></code>
          ${shown && !nothing && html`<span class="op-what"><${Name} text=${shown} /></span>`}
          ${nothing && html`<strong class="op-nothing">${chip.negated ? "excludes nothing" : "matches nothing"}</strong>`}
          <button type="button" class="op-remove" aria-label=${`Remove ${typed}`} title=${`Remove ${typed} from the query`} onClick=${() => remove(chip, i)}>
            <span aria-hidden="true">×</span>
          </button>
        </li>`;
      })}
    </ul>
  `;
}

function uniqueNames(people) {
  const count = new Map();
  for (const p of people) count.set(p.name, (count.get(p.name) || 0) + 1);
  return (p) => plainLabel(count.get(p.name) > 1 ? `${p.name} (${p.key})` : p.name);
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

// The pickers are views of the query: each shows the operator it stands for (or "As in the
// query" when the typed ones are more than it can show) and choosing writes that operator.
function Filters({ url, navigate, dir, chips }) {
  const { scopes, members, agents, owners, nameOf } = dir;
  const groups = [
    ["Channels", scopes.filter((s) => s.kind === "channel")],
    ["Direct messages", scopes.filter((s) => s.kind === "dm")],
    ["Threads", scopes.filter((s) => s.kind === "thread")],
  ];
  const set = (q) => navigate({ q, open: "", in: "" }, { push: true });
  const pick = (names, option) => {
    if (option === "query") return;
    set(replaceOperators(url.q, names, option ? operatorFor(option, dir) : ""));
  };
  const day = (name) => {
    const positive = chips.filter((c) => c.name === name && !c.negated);
    return positive.length === 1 && DAY.test(positive[0].value) ? positive[0].value : "";
  };
  const setDay = (name, value) => set(replaceOperators(url.q, [name], value ? `${name}:${value}` : ""));
  const author = pickerValue(chips, ["from", "agents-of"], dir);
  const channel = pickerValue(chips, ["in"], dir);
  const since = day("since");
  const until = day("until");
  const any = chips.length > 0;
  const byLabel = (a, b) => a.label.localeCompare(b.label);
  const asTyped = html`<option value="query">As in the query</option>`;
  return html`
    <div class="filters">
      <label class="field">
        <span>Channel</span>
        <select value=${channel} onChange=${(e) => pick(["in"], e.currentTarget.value)}>
          <option value="">All</option>
          ${channel === "query" && asTyped}
          ${groups.map(
            ([label, list]) =>
              list.length > 0 &&
              html`<optgroup label=${label}>
                ${list
                  .map((s) => ({ id: s.id, label: plainLabel(scopeLabel(s)) }))
                  .sort(byLabel)
                  .map((s) => html`<option value=${s.id}>${s.label}</option>`)}
              </optgroup>`
          )}
        </select>
      </label>
      <label class="field">
        <span>Author</span>
        <select value=${author} onChange=${(e) => pick(["from", "agents-of"], e.currentTarget.value)}>
          <option value="">Anyone</option>
          ${author === "query" && asTyped}
          <optgroup label="People">
            ${members.map((m) => html`<option value=${`MEMBER:${m.id}`}>${nameOf(m)}</option>`)}
          </optgroup>
          ${agents.length > 0 &&
          html`<optgroup label="Agents">
            ${agents.map((a) => html`<option value=${`AGENT:${a.id}`}>${plainLabel(`${a.name} (agent of ${a.owner.name})`)}</option>`)}
          </optgroup>`}
          ${owners.length > 0 &&
          html`<optgroup label="Agents of a person">
            ${owners.map((o) => html`<option value=${`MEMBER_AGENTS:${o.id}`}>${plainLabel(`Agents of ${o.name}`)}</option>`)}
          </optgroup>`}
        </select>
      </label>
      <label class="field">
        <span>From</span>
        <input
          type="date"
          value=${since}
          max=${until || undefined}
          title="Messages from this day on (since:)"
          onChange=${(e) => setDay("since", e.currentTarget.value)}
        />
      </label>
      <label class="field">
        <span>To</span>
        <input
          type="date"
          value=${until}
          min=${since || undefined}
          title="Messages up to the end of this day (until:)"
          onChange=${(e) => setDay("until", e.currentTarget.value)}
        />
      </label>
      ${any &&
      html`<button type="button" class="link clear" onClick=${() => set(without(url.q, () => true))}>
        Clear filters
      </button>`}
    </div>
  `;
}

const IDLE = { status: "idle", items: [], fresh: [], pageInfo: null, error: null, stopped: false, interpretation: null, notice: "", liveError: null };

// messageSearch pages. A page whose candidate budget ran out may be short or empty: keep going
// from endCursor by itself (up to AUTO_CONTINUE pages in a row) while hasNextPage, saying it is
// still searching older messages; never "no results" while hasNextPage is true.
//
// Live (docs/live.md, The Messages tab): the first page also reads the live log's position
// (liveEvent, read before the page), and the search's subscription starts from it, so nothing
// committed after the page was read is missed; an update for a hit already shown replaces it.
// A post is the newest message of the workspace, so a new hit goes on top (when the viewer has
// scrolled down, it waits in the "N new" button); an edited hit is replaced where it is (or,
// newly a hit, placed by its time among those shown); a removed one goes.
function useSearch(token, live, url, onAuthError) {
  const [search, setSearch] = useState(IDLE);
  const [rerun, setRerun] = useState(0);
  const rerunNotice = useRef("");
  const actions = useRef({ more() {}, retry() {}, showFresh() {} });
  // Stable handlers for the current search (actions.current changes with each search).
  const handlers = useRef({
    more: () => actions.current.more(),
    retry: () => actions.current.retry(),
    showFresh: () => actions.current.showFresh(),
  });
  const key = url.q;
  useEffect(() => {
    if (!url.q.trim()) {
      setSearch(IDLE);
      return undefined;
    }
    const controller = new AbortController();
    const variables = { query: url.q, timeZone: TIME_ZONE };
    // The previous answer's interpretation stays until this one's arrives (for another query,
    // so chips fall back to the query's own operators meanwhile).
    let state = { ...IDLE, status: "loading", interpretation: search.interpretation, notice: rerunNotice.current };
    rerunNotice.current = "";
    const update = (patch) => {
      state = { ...state, ...patch };
      if (!controller.signal.aborted) setSearch(state);
    };
    update({});
    let unsubscribe = null;
    const subscribe = (after) => {
      if (unsubscribe || !live || controller.signal.aborted) return;
      unsubscribe = live.subscribe(SEARCH_UPDATES, { ...variables, after }, {
        next: (u) => update(applyUpdate(state, u)),
        onInvalidCursor: () => {
          // Away longer than the live log keeps: the search runs again from the newest.
          rerunNotice.current = "You were away too long for the updates to catch up, so the search ran again.";
          setRerun((n) => n + 1);
        },
        error: (error) => update({ liveError: error }),
      });
    };
    const page = async (after, auto, found) => {
      try {
        const first = after === null;
        const data = await gql(token, SEARCH, { ...variables, first: PAGE, after, live: first }, controller.signal);
        const conn = data.messageSearch;
        const seen = new Set(state.items.map((e) => e.node.id));
        const items = state.items.concat(conn.edges.filter((e) => !seen.has(e.node.id)));
        const total = found + conn.edges.length;
        const short = conn.candidateBudgetExhausted && conn.pageInfo.hasNextPage && total < PAGE;
        const again = short && auto < AUTO_CONTINUE;
        const interpretation = conn.interpretation ? { ...conn.interpretation, query: url.q } : null;
        update({ items, pageInfo: conn.pageInfo, status: again ? "continuing" : "done", stopped: short && !again, error: null, interpretation });
        if (first && conn.liveEvent) subscribe(conn.liveEvent);
        if (again) await page(conn.pageInfo.endCursor, auto + 1, total);
      } catch (error) {
        if (error.name === "AbortError" || controller.signal.aborted) return;
        if (error instanceof AuthError) onAuthError();
        else update({ status: "error", error });
      }
    };
    const resume = (status) => {
      if (state.status !== "done" && state.status !== "error") return;
      if (state.pageInfo && !state.pageInfo.hasNextPage && state.status !== "error") return;
      update({ status: state.items.length || state.pageInfo ? status : "loading", error: null, stopped: false });
      page(state.pageInfo ? state.pageInfo.endCursor : null, 0, 0);
    };
    const showFresh = () => {
      if (!state.fresh.length) return;
      update({ items: [...state.fresh, ...state.items], fresh: [] });
    };
    actions.current = { more: () => resume("more"), retry: () => resume("more"), showFresh };
    page(null, 0, 0);
    return () => {
      controller.abort();
      if (unsubscribe) unsubscribe();
    };
  }, [token, key, live, rerun]);
  return [search, handlers.current];
}

// The results list scrolled out of view at its top: new hits wait in the "N new" button
// rather than moving what the viewer is reading.
function scrolledAway() {
  const list = document.querySelector(".result-list");
  return Boolean(list && list.offsetParent !== null && list.getBoundingClientRect().top < -8);
}

/** The search's state after one messageSearchUpdates update (see useSearch). */
function applyUpdate(state, u) {
  const { items, fresh } = state;
  if (u.kind === "REMOVED") {
    const id = u.removedId;
    return { items: items.filter((e) => e.node.id !== id), fresh: fresh.filter((e) => e.node.id !== id) };
  }
  const edge = u.edge;
  if (!edge) return {};
  const id = edge.node.id;
  const marked = { ...edge, live: u.kind === "ADDED" ? "added" : "edited" };
  const at = items.findIndex((e) => e.node.id === id);
  if (at >= 0) {
    const next = items.slice();
    // Already shown (a hit the first page showed too, or an edit): replaced where it is.
    next[at] = { ...marked, live: u.kind === "EDITED" ? "edited" : items[at].live };
    return { items: next };
  }
  const waiting = fresh.findIndex((e) => e.node.id === id);
  if (waiting >= 0) {
    const next = fresh.slice();
    next[waiting] = marked;
    return { fresh: next };
  }
  if (u.kind === "ADDED") {
    return scrolledAway() ? { fresh: [marked, ...fresh] } : { items: [marked, ...items] };
  }
  // An edit made it a hit: its place among those shown, by time; older than all of them while
  // more pages remain, it comes with those pages.
  const t = Date.parse(edge.node.createdAt);
  const before = items.findIndex((e) => Date.parse(e.node.createdAt) < t);
  if (before < 0 && state.pageInfo && state.pageInfo.hasNextPage) return {};
  const next = items.slice();
  next.splice(before < 0 ? next.length : before, 0, marked);
  return { items: next };
}

function Results({ search, actions, url, chips, onOpen, openId, navigate }) {
  const sentinel = useRef();
  const list = useRef();
  const { status, items, fresh, pageInfo, error, stopped, notice, liveError } = search;
  const hasNext = Boolean(pageInfo && pageInfo.hasNextPage);

  // Infinite scroll: the "More results" button loads by itself once it scrolls into view.
  useEffect(() => {
    const target = sentinel.current;
    if (!target || status !== "done" || !hasNext || stopped) return undefined;
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) actions.more();
    });
    observer.observe(target);
    return () => observer.disconnect();
  }, [status, hasNext, stopped, items.length]);

  const onKeyDown = (event) => {
    const links = [...list.current.querySelectorAll(".result")];
    const at = links.indexOf(document.activeElement);
    let next = null;
    if (event.key === "ArrowDown") next = Math.min(at + 1, links.length - 1);
    else if (event.key === "ArrowUp") next = at - 1;
    else if (event.key === "Home") next = 0;
    else if (event.key === "End") next = links.length - 1;
    else if (event.key === "Escape") next = -1;
    else return;
    event.preventDefault();
    if (next < 0) document.getElementById("q").focus();
    else if (links[next]) links[next].focus();
  };

  // New hits that waited while the viewer was scrolled down: on top now, the view with them.
  const showFresh = () => {
    actions.showFresh();
    window.requestAnimationFrame(() => {
      window.scrollTo({ top: 0 });
      const first = list.current && list.current.querySelector(".result");
      if (first) first.focus({ preventScroll: true });
    });
  };

  if (status === "idle") {
    return html`
      <section class="results empty-state" aria-label="Search results">
        <p>Search every channel, DM and thread you can read. Newest first.</p>
        <p class="examples">
          Try:
          ${EXAMPLES.map(
            (q) =>
              html`<button type="button" class="chip" onClick=${() => navigate({ q, open: "", in: "" }, { push: true })}>${q}</button>`
          )}
        </p>
      </section>
    `;
  }

  let summary = "";
  if (status === "loading") summary = "Searching…";
  else if (items.length > 0) summary = `${items.length}${hasNext ? "+" : ""} message${items.length === 1 && !hasNext ? "" : "s"}`;

  return html`
    <section class="results" aria-label="Search results" aria-busy=${status === "loading" || status === "continuing"}>
      <p class="summary" role="status" aria-live="polite">${summary}</p>
      ${notice && html`<p class="live-note" role="status">${notice}</p>`}
      ${liveError &&
      html`<p class="live-note" role="status">Live updates stopped for this search (${liveError.message}). Search again to see new messages.</p>`}
      ${fresh.length > 0 &&
      html`<button type="button" class="fresh" data-testid="new-results" title="Show the new results at the top" onClick=${showFresh}>
        ${fresh.length} new
      </button>`}
      <ol class="result-list" ref=${list} onKeyDown=${onKeyDown}>
        ${items.map(
          (edge) => html`<li key=${edge.node.id} class=${edge.live === "added" ? "arrived" : undefined}>
            <${Result} edge=${edge} url=${url} selected=${edge.node.id === openId} onOpen=${onOpen} />
          </li>`
        )}
      </ol>
      <div class="after-results">
        ${status === "continuing" &&
        html`<p class="status searching" role="status"><span class="spinner" aria-hidden="true"></span>
          Still searching older messages…</p>`}
        ${status === "more" && html`<p class="status" role="status"><span class="spinner" aria-hidden="true"></span> Loading more…</p>`}
        ${status === "error" && html`<${ErrorBox} error=${error} onRetry=${actions.retry} />`}
        ${status === "done" &&
        hasNext &&
        stopped &&
        html`<p class="status">
          Still searching older messages: the newest ones had no ${items.length ? "more " : ""}matches you can read.
        </p>`}
        ${status === "done" &&
        hasNext &&
        html`<button type="button" class="more" ref=${sentinel} onClick=${actions.more}>
          ${stopped ? "Keep searching older messages" : "More results"}
        </button>`}
        ${status === "done" &&
        !hasNext &&
        items.length === 0 &&
        html`<div class="nothing" role="status">
          <p><strong>No messages match “${url.q}”</strong>.</p>
          <p>
            ${chips.length > 0
              ? "Every word must appear and every filter must hold; try fewer words, or remove a filter above."
              : "Every word must appear; try fewer words."}
          </p>
        </div>`}
        ${status === "done" && !hasNext && items.length > 0 && html`<p class="end">No more results.</p>`}
      </div>
    </section>
  `;
}

function Highlighted({ body, ranges }) {
  return segments(body, ranges).map((s) =>
    s.hit ? html`<mark><${Shown} text=${s.text} /></mark>` : html`<${Shown} text=${s.text} />`
  );
}

function Author({ author }) {
  const agent = author && author.__typename !== "Member";
  return html`<span class="author"><${Name} text=${authorName(author)} />${agent && html` <span class="badge">agent</span>`}</span>`;
}

function Time({ iso }) {
  const t = when(iso);
  return html`<time datetime=${iso} title=${t.full}>${t.short}</time>`;
}

function Result({ edge, url, selected, onOpen }) {
  const m = edge.node;
  // What a list shows of a message: a bounded excerpt, however long the message is.
  const excerpt = edge.excerpt;
  const href = stateHash({ ...url, open: m.id, in: m.scope.id });
  const onClick = (event) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    onOpen(edge);
  };
  return html`
    <a
      class=${selected ? "result selected" : "result"}
      href=${href}
      data-message-id=${m.id}
      data-ranges=${JSON.stringify(edge.highlights)}
      data-live=${edge.live || undefined}
      onClick=${onClick}
    >
      <span class="meta">
        <${Author} author=${m.author} />
        <span class="where"><${Name} text=${scopeLabel(m.scope)} /></span>
        <${Time} iso=${m.createdAt} />
        ${edge.live === "edited" && html`<span class="badge">edited</span>`}
      </span>
      <span class="body">${excerpt.moreBefore && "… "}<${Highlighted} body=${excerpt.text} ranges=${excerpt.highlights} />${excerpt.moreAfter && " …"}</span>
    </a>
  `;
}

// A hit's conversation: Scope.messages(around:), the hit centered, flashed and marked
// aria-current; earlier and later messages load when scrolled to (or with the buttons). It
// updates live (scopeMessages from the first page's liveEvent): new messages are appended when
// the latest ones are shown (followed when the view is at the bottom), edits replace a row,
// removed messages go.
function Conversation({ token, live, scopeId, messageId, onClose, onAuthError }) {
  const [conv, setConv] = useState({ status: "loading", scope: null, edges: [], pageInfo: null, error: null, loading: "" });
  const [ranges, setRanges] = useState(() => hitRanges(messageId));
  const [attempt, setAttempt] = useState(0);
  const [liveEvent, setLiveEvent] = useState(null);
  const [liveNote, setLiveNote] = useState("");
  const panel = useRef();
  const hit = useRef();
  const centered = useRef(false);
  const armed = useRef(false);
  const keep = useRef(null);
  const follow = useRef(false);
  const convRef = useRef(conv);
  convRef.current = conv;

  useEffect(() => {
    const controller = new AbortController();
    setLiveEvent(null);
    gql(token, CONVERSATION, { scope: scopeId, around: messageId, first: AROUND, last: AROUND, live: true }, controller.signal)
      .then((data) => {
        const scope = data.node;
        if (!scope || !scope.messages) {
          setConv((c) => ({ ...c, status: "missing" }));
          return;
        }
        setConv({ status: "ready", scope, edges: scope.messages.edges, pageInfo: scope.messages.pageInfo, error: null, loading: "" });
        setLiveEvent(scope.messages.liveEvent || null);
      })
      .catch((error) => {
        if (error.name === "AbortError") return;
        if (error instanceof AuthError) onAuthError();
        else setConv((c) => ({ ...c, status: "error", error }));
      });
    return () => controller.abort();
  }, [token, scopeId, messageId, attempt]);

  useEffect(() => {
    if (!live || !liveEvent) return undefined;
    const apply = (u) => {
      const c = convRef.current;
      if (c.status !== "ready") return;
      const box = panel.current;
      const atBottom = Boolean(box) && box.scrollHeight - box.scrollTop - box.clientHeight < 80;
      if (u.kind === "REMOVED") {
        setConv({ ...c, edges: c.edges.filter((e) => e.node.id !== u.removedId) });
        return;
      }
      const m = u.message;
      if (!m) return;
      const at = c.edges.findIndex((e) => e.node.id === m.id);
      if (at >= 0) {
        const edges = c.edges.slice();
        edges[at] = { ...edges[at], node: m, live: u.kind === "EDITED" ? "edited" : edges[at].live };
        // The hit's highlights were the search's, for the text before the edit.
        if (u.kind === "EDITED" && m.id === messageId) setRanges([]);
        setConv({ ...c, edges });
        return;
      }
      // Placed by its position in the conversation, if the rows shown reach it.
      const first = c.edges[0];
      const last = c.edges[c.edges.length - 1];
      if (c.pageInfo.hasNextPage && (!last || m.seq > last.node.seq)) return;
      if (c.pageInfo.hasPreviousPage && first && m.seq < first.node.seq) return;
      const edges = c.edges.slice();
      const before = edges.findIndex((e) => e.node.seq > m.seq);
      edges.splice(before < 0 ? edges.length : before, 0, { cursor: null, node: m, live: u.kind === "ADDED" ? "added" : "edited" });
      follow.current = atBottom && before < 0;
      setConv({ ...c, edges });
    };
    return live.subscribe(SCOPE_UPDATES, { scopeId, after: liveEvent }, {
      next: apply,
      onInvalidCursor: () => {
        setLiveNote("You were away too long for the updates to catch up, so the conversation was loaded again.");
        setAttempt((n) => n + 1);
      },
      error: (error) => setLiveNote(`Live updates stopped for this conversation (${error.message}).`),
    });
  }, [live, liveEvent, scopeId, messageId]);

  const load = async (direction) => {
    const c = convRef.current;
    if (c.status !== "ready" || c.loading || !c.pageInfo) return;
    const earlier = direction === "earlier";
    if (earlier ? !c.pageInfo.hasPreviousPage : !c.pageInfo.hasNextPage) return;
    setConv({ ...c, loading: direction });
    const variables = earlier
      ? { scope: scopeId, last: MORE_ROWS, before: c.pageInfo.startCursor }
      : { scope: scopeId, first: MORE_ROWS, after: c.pageInfo.endCursor };
    try {
      const data = await gql(token, CONVERSATION, variables);
      const page = data.node.messages;
      const now = convRef.current;
      if (earlier) keep.current = panel.current.scrollHeight - panel.current.scrollTop;
      setConv({
        ...now,
        loading: "",
        // A message that arrived live may be on the page too.
        edges: earlier
          ? [...page.edges.filter((e) => !now.edges.some((n) => n.node.id === e.node.id)), ...now.edges]
          : [...now.edges, ...page.edges.filter((e) => !now.edges.some((n) => n.node.id === e.node.id))],
        pageInfo: earlier
          ? { ...now.pageInfo, hasPreviousPage: page.pageInfo.hasPreviousPage, startCursor: page.pageInfo.startCursor }
          : { ...now.pageInfo, hasNextPage: page.pageInfo.hasNextPage, endCursor: page.pageInfo.endCursor },
      });
    } catch (error) {
      if (error instanceof AuthError) onAuthError();
      else setConv({ ...convRef.current, loading: "", error });
    }
  };

  useLayoutEffect(() => {
    const box = panel.current;
    if (!box || conv.status !== "ready") return;
    if (keep.current !== null) {
      // Earlier messages were put above: keep what was on screen where it was.
      box.scrollTop = box.scrollHeight - keep.current;
      keep.current = null;
    }
    if (follow.current) {
      // A new message arrived while the view was at the bottom: keep following.
      follow.current = false;
      box.scrollTop = box.scrollHeight;
    }
    if (!centered.current && hit.current) {
      centered.current = true;
      const row = hit.current;
      box.scrollTop = row.offsetTop - box.clientHeight / 2 + row.offsetHeight / 2;
      row.focus({ preventScroll: true });
      // Loading on scroll starts once the person scrolls, not because of the centering.
      window.setTimeout(() => (armed.current = true), 400);
    }
  }, [conv]);

  const onScroll = () => {
    const box = panel.current;
    if (!armed.current || !box) return;
    if (box.scrollTop < 120) load("earlier");
    else if (box.scrollHeight - box.scrollTop - box.clientHeight < 120) load("later");
  };
  const onKeyDown = (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      onClose();
    }
  };

  const scope = conv.scope;
  const title = scope ? scopeLabel(scope) : "Conversation";
  return html`
    <section class="conversation" aria-label=${`Conversation: ${title}`} onKeyDown=${onKeyDown}>
      <header class="conversation-head">
        <button type="button" class="back" onClick=${onClose} aria-label="Back to results">← Results</button>
        <h2><${Name} text=${title} /></h2>
      </header>
      <div class="conversation-body" ref=${panel} onScroll=${onScroll}>
        ${liveNote && html`<p class="live-note" role="status">${liveNote}</p>`}
        ${conv.status === "loading" && html`<p class="status" role="status">Opening the conversation…</p>`}
        ${conv.status === "missing" && html`<p class="status">This conversation is not available to you.</p>`}
        ${conv.status === "error" && html`<${ErrorBox}
          error=${conv.error}
          onRetry=${() => {
            setConv((c) => ({ ...c, status: "loading", error: null }));
            setAttempt((n) => n + 1);
          }}
        />`}
        ${conv.status === "ready" &&
        html`
          ${conv.pageInfo.hasPreviousPage
            ? html`<button type="button" class="load" onClick=${() => load("earlier")} disabled=${conv.loading === "earlier"}>
                ${conv.loading === "earlier" ? "Loading earlier messages…" : "Load earlier messages"}
              </button>`
            : html`<p class="edge-note">Start of the conversation</p>`}
          <ol class="rows">
            ${conv.edges.map((edge) => {
              const m = edge.node;
              const isHit = m.id === messageId;
              const cls = ["row", isHit && "hit flash", edge.live === "added" && "arrived"].filter(Boolean).join(" ");
              return html`<li
                key=${m.id}
                class=${cls}
                data-row-id=${m.id}
                data-live=${edge.live || undefined}
                aria-current=${isHit ? "true" : undefined}
                tabindex=${isHit ? "-1" : undefined}
                ref=${isHit ? hit : undefined}
              >
                <span class="meta"><${Author} author=${m.author} /><${Time} iso=${m.createdAt} />${edge.live === "edited" && html`<span class="badge">edited</span>`}</span>
                <span class="body">${isHit ? html`<${Highlighted} body=${m.body} ranges=${ranges} />` : html`<${Shown} text=${m.body} />`}</span>
              </li>`;
            })}
          </ol>
          ${!conv.edges.some((e) => e.node.id === messageId) &&
          html`<p class="status">That message is no longer in this conversation.</p>`}
          ${conv.error && html`<${ErrorBox} error=${conv.error} onRetry=${() => setConv({ ...conv, error: null })} />`}
          ${conv.pageInfo.hasNextPage
            ? html`<button type="button" class="load" onClick=${() => load("later")} disabled=${conv.loading === "later"}>
                ${conv.loading === "later" ? "Loading later messages…" : "Load later messages"}
              </button>`
            : html`<p class="edge-note">Latest message</p>`}
        `}
      </div>
    </section>
  `;
}

// The hit's highlights come from its search result (the server's ranges), when it is on the page.
function hitRanges(messageId) {
  const link = document.querySelector(`.result[data-message-id="${CSS.escape(messageId)}"]`);
  return link && link.dataset.ranges ? JSON.parse(link.dataset.ranges) : [];
}

function ErrorBox({ error, onRetry, refused = "That search cannot run" }) {
  let title = "Something went wrong";
  let text = error && error.message;
  if (error instanceof NetworkError) {
    title = "Cannot reach Recall";
    text = "The request did not get through. Check your connection, or that `recall serve` is running, and try again.";
  } else if (error instanceof ApiError && error.code === "SEARCH_UNAVAILABLE") {
    title = "Search is not available yet";
    text = "This workspace's search index is still being prepared. Try again in a minute.";
  } else if (error instanceof ApiError && error.code === "BAD_USER_INPUT") {
    title = refused;
  } else if (error instanceof ApiError && error.code === "INVALID_CURSOR") {
    title = "The results changed";
    text = "Search again to start from the newest messages.";
  }
  return html`
    <div class="error" role="alert">
      <p><strong>${title}</strong></p>
      ${text && html`<p>${text}</p>`}
      ${error instanceof ApiError && error.code && html`<p class="code">${error.code}</p>`}
      ${onRetry && html`<button type="button" onClick=${onRetry}>Try again</button>`}
    </div>
  `;
}

render(html`<${App} />`, document.getElementById("app"));
