// The operators of a query as the person typed it (`from:@bob in:#infra rollback since:2026-03-01`),
// read the way the server reads them (app/message_search/operators.py): tokens separated by spaces, an
// operator is a known name in any case followed directly by `:` at the start of a token
// (optionally negated by `-`), a value may be quoted after its sigil (`@"Sam Lee"`,
// `#"release train"`), an unclosed quote is just a character. Everything else is text.
//
// The tab never rewrites what was typed: it only cuts out or appends whole operator tokens, so
// the query in the box and in the URL stays the person's own.

export const OPERATORS = ["from", "agents-of", "in", "since", "until", "on"];
/** Operators whose values are people, agents or conversations (suggested while typing). */
export const SUGGESTED = ["from", "agents-of", "in"];

const OPERATOR_AT = /^(-?)(from|agents-of|in|since|until|on):/i;
const SPACE = /\s/;

/**
 * The tokens of `query`: {kind: "op", start, end, name, negated, value, valueStart} with `value`
 * as the server reports it (quotes removed, sigil kept, inner spaces collapsed), or
 * {kind: "text", start, end}.
 */
export function tokenize(query) {
  const tokens = [];
  let i = 0;
  const n = query.length;
  while (i < n) {
    if (SPACE.test(query[i])) {
      i += 1;
      continue;
    }
    const start = i;
    const op = OPERATOR_AT.exec(query.slice(i, i + 12));
    if (op) {
      const valueStart = i + op[0].length;
      const { value, end } = valueAt(query, valueStart);
      tokens.push({ kind: "op", start, end, name: op[2].toLowerCase(), negated: op[1] === "-", value, valueStart });
      i = end;
      continue;
    }
    i = textEnd(query, i);
    tokens.push({ kind: "text", start, end: i });
  }
  return tokens;
}

function valueAt(query, i) {
  const sigil = query[i] === "@" || query[i] === "#" ? query[i] : "";
  const q = i + sigil.length;
  if (query[q] === '"') {
    const close = query.indexOf('"', q + 1);
    if (close !== -1) {
      const inner = query.slice(q + 1, close).split(/\s+/).filter(Boolean).join(" ");
      return { value: inner ? sigil + inner : "", end: close + 1 };
    }
  }
  let end = i;
  while (end < query.length && !SPACE.test(query[end])) end += 1;
  return { value: query.slice(i, end).replaceAll('"', ""), end };
}

function textEnd(query, i) {
  const j = query[i] === "-" ? i + 1 : i;
  if (query[j] === '"') {
    const close = query.indexOf('"', j + 1);
    if (close !== -1) return close + 1;
  }
  let end = i;
  while (end < query.length && !SPACE.test(query[end])) end += 1;
  return end;
}

/** The operators of `query` (tokens of kind "op"). */
export function operators(query) {
  return tokenize(query).filter((t) => t.kind === "op");
}

/** True when the query has words besides its operators. */
export function hasWords(query) {
  return tokenize(query).some((t) => t.kind === "text");
}

/** An operator being typed but still without a value (`from:` alone): not a search yet. */
export function incomplete(query) {
  return operators(query).some((t) => t.value === "");
}

/** `value` written so that it reads back as itself: `@"Sam Lee"`, `#general`, `me`. */
export function formatValue(value) {
  const sigil = value[0] === "@" || value[0] === "#" ? value[0] : "";
  const bare = value.slice(sigil.length).replaceAll('"', "");
  return bare === "" || /\s/.test(bare) ? `${sigil}"${bare}"` : sigil + bare;
}

/** `-from:@bob` */
export function formatOperator({ name, value, negated }) {
  return `${negated ? "-" : ""}${name}:${formatValue(value)}`;
}

/** `query` without the characters start..end, the spaces around the cut made one. */
export function cut(query, start, end) {
  const before = query.slice(0, start).replace(/\s+$/, "");
  const after = query.slice(end).replace(/^\s+/, "");
  return before && after ? `${before} ${after}` : before + after;
}

/** `query` with `addition` (an operator) appended after what was typed. */
export function append(query, addition) {
  const typed = query.replace(/\s+$/, "");
  return typed ? `${typed} ${addition}` : addition;
}

/** `query` without the operators `drop(token)` chooses (later ones cut first). */
export function without(query, drop) {
  let out = query;
  const gone = operators(query).filter(drop).reverse();
  for (const t of gone) out = cut(out, t.start, t.end);
  return out;
}

/**
 * `query` without the operator the server reported as `{name, value, negated}`: the `nth`
 * token with that name, sign and value (0 = the first). Unchanged if it is not there.
 */
export function removeOperator(query, { name, value, negated }, nth = 0) {
  const same = operators(query).filter(
    (t) => t.name === name && t.negated === negated && t.value.toLowerCase() === value.toLowerCase()
  );
  const t = same[nth] || same[same.length - 1];
  return t ? cut(query, t.start, t.end) : query;
}

/** `query` whose positive operators named in `names` are replaced by `replacement` ("" = none). */
export function replaceOperators(query, names, replacement) {
  const rest = without(query, (t) => !t.negated && names.includes(t.name));
  return replacement ? append(rest, replacement) : rest;
}

/**
 * What is being typed at `caret` when it is the value of a `from:`, `agents-of:` or `in:`
 * operator: {name, negated, partial, start, end} (start..end: the value to replace), or null.
 * A value opened with a quote runs to the caret while typed (`from:"Bob Ok|`).
 */
export function valueAtCaret(query, caret) {
  const upto = query.slice(0, caret);
  const m = /(?:^|\s)(-?)(from|agents-of|in):([@#]?)(?:(")([^"]*)|([^\s"]*))$/i.exec(upto);
  if (!m) return null;
  const [, minus, name, sigil, quote = "", quoted, bare] = m;
  const typed = quote ? quoted : bare;
  const start = caret - sigil.length - quote.length - typed.length;
  let end = caret;
  if (!quote) {
    while (end < query.length && !SPACE.test(query[end])) end += 1;
  } else {
    const close = query.indexOf('"', caret);
    const space = query.slice(caret).search(/\s/);
    end = close !== -1 && (space === -1 || close < caret + space) ? close + 1 : space === -1 ? query.length : caret + space;
  }
  return { name: name.toLowerCase(), negated: minus === "-", sigil, partial: typed, start, end };
}

/** `query` with start..end replaced by `value` and a space after it; and the caret after that. */
export function insertValue(query, { start, end }, value) {
  const text = formatValue(value);
  const after = query.slice(end).replace(/^\s+/, "");
  return { query: `${query.slice(0, start)}${text} ${after}`, caret: start + text.length + 1 };
}
