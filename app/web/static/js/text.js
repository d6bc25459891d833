// Pure helpers: highlight segments, labels, times, and the state kept in the URL fragment.

/**
 * Split `body` at the server's highlight ranges (UTF-16 code units, which is what JavaScript
 * strings index): [{text, hit}]. Ranges are used as given, never re-computed here; out of
 * range or overlapping ones are clamped rather than trusted blindly.
 */
export function segments(body, ranges) {
  const out = [];
  let at = 0;
  const sorted = [...(ranges || [])].sort((a, b) => a.start - b.start);
  for (const { start, end } of sorted) {
    const s = Math.max(at, Math.min(start, body.length));
    const e = Math.max(s, Math.min(end, body.length));
    if (e === s) continue;
    if (s > at) out.push({ text: body.slice(at, s), hit: false });
    out.push({ text: body.slice(s, e), hit: true });
    at = e;
  }
  if (at < body.length || out.length === 0) out.push({ text: body.slice(at), hit: false });
  return out;
}

// Characters that change how text reads without showing themselves: bidirectional controls
// (an RLO turns "invoice_\u202efdp.exe" into "invoice_exe.pdf"), zero-width and other invisible
// characters (a name "Al\u200bice" that looks like "Alice"), and Unicode tag characters. They
// are shown as visible marks instead, as GitHub and Slack do.
const HIDDEN = /[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb]|[\u{e0000}-\u{e007f}]/gu;

/** `text` as [{text}] pieces and [{hidden: "U+202E"}] marks for characters that hide. */
export function reveal(text) {
  const out = [];
  let at = 0;
  for (const match of String(text).matchAll(HIDDEN)) {
    if (match.index > at) out.push({ text: text.slice(at, match.index) });
    const code = match[0].codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
    out.push({ hidden: `U+${code}` });
    at = match.index + match[0].length;
  }
  if (at < text.length || out.length === 0) out.push({ text: text.slice(at) });
  return out;
}

/** A label for a picker: hidden characters shown as marks, at most `max` characters. */
export function plainLabel(text, max = 60) {
  const shown = reveal(text)
    .map((p) => (p.hidden ? `<${p.hidden}>` : p.text))
    .join("");
  return shown.length > max ? `${shown.slice(0, max - 1)}…` : shown;
}

/** `#general`, `#leadership (private)`, `DM: alice-bob`, `Thread in #general`. */
export function scopeLabel(scope) {
  if (!scope) return "";
  if (scope.kind === "thread") {
    const parent = scope.parent;
    return parent ? `Thread in #${parent.name || parent.key}` : "Thread";
  }
  if (scope.kind === "dm") return `DM: ${scope.name || scope.key.replace(/^dm-/, "")}`;
  const name = `#${scope.name || scope.key}`;
  return scope.visibility === "private" ? `${name} (private)` : name;
}

export function authorName(author) {
  if (!author) return "Unknown";
  if (author.__typename === "DeletedAgent") return author.name || "Deleted agent";
  return author.name;
}

const SHORT = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
const FULL = new Intl.DateTimeFormat(undefined, { dateStyle: "full", timeStyle: "long" });

export function when(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? { short: iso, full: iso } : { short: SHORT.format(date), full: FULL.format(date) };
}

// The URL fragment holds the whole page state (a search is shareable and the back button
// works), and a fragment never reaches a server log. `token` is read once and removed. The
// filters are operators in `q` (as typed); `channel`, `author`, `since` and `until` are only
// read, from links made before that, and turned into operators.
export const STATE_KEYS = ["q", "channel", "author", "since", "until", "open", "in"];

export function readState(hash = window.location.hash) {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  const state = {};
  for (const key of STATE_KEYS) state[key] = params.get(key) || "";
  return { state, token: params.get("token") || "" };
}

export function stateHash(state) {
  const params = new URLSearchParams();
  for (const key of STATE_KEYS) if (state[key]) params.set(key, state[key]);
  const text = params.toString();
  return text ? `#${text}` : "";
}

export function writeState(state, { push }) {
  const url = window.location.pathname + window.location.search + stateHash(state);
  if (push) window.history.pushState(null, "", url);
  else window.history.replaceState(null, "", url);
}
