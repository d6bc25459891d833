// An MCP client nobody at Recall wrote: the official TypeScript SDK (pinned in
// package-lock.json), against /mcp of a running `recall serve` and against `recall mcp`.
// tests/mcp/test_mcp_interop.py runs it with a fixture on stdin:
//   {url, recall, database_url, member, agent, message, conversation, requester}
// and reads its last stdout line: {"failures": [...], "checked": {http: {...}, stdio: {...}}}.
//
// Over both transports: the tools each token kind lists (identical over both), one success and
// several errors of every tool, each result checked by the SDK itself (it rejects structured
// content that does not match the tool's outputSchema) and again here against the declared
// input and output schemas; an error must be text `CODE: message` with no structured content.
// Then JSON-RPC batches (answered at 2025-03-26, refused at 2025-06-18), a line that is not
// JSON, and a bad token.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';

const CODES = new Set([
  'BAD_USER_INPUT', 'FORBIDDEN', 'INVALID_CURSOR', 'SEARCH_UNAVAILABLE', 'SERVICE_UNAVAILABLE',
  'TIMEOUT', 'UNAUTHENTICATED', 'INTERNAL_SERVER_ERROR',
]);
const MEMBER_TOOLS = ['read_conversation', 'search_messages'];
const AGENT_TOOLS = ['post_reply', 'search_history', 'start_turn'];

const fixture = JSON.parse(await readAll(process.stdin));
const failures = [];
const checked = {};
const listings = {};
const validator = new AjvJsonSchemaValidator();

function expect(condition, what) {
  if (!condition) failures.push(what);
}

async function readAll(stream) {
  let text = '';
  for await (const chunk of stream) text += chunk;
  return text;
}

function stdioEnv(token) {
  return {
    PATH: process.env.PATH ?? '',
    DATABASE_URL: fixture.database_url,
    RECALL_TOKEN: token,
    RECALL_LOG_LEVEL: 'warning',
  };
}

function transport(kind, token) {
  if (kind === 'http') {
    return new StreamableHTTPClientTransport(new URL(fixture.url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
  }
  return new StdioClientTransport({
    command: fixture.recall, args: ['mcp'], env: stdioEnv(token), stderr: 'ignore',
  });
}

async function connect(kind, token) {
  const client = new Client({ name: 'recall-interop-ts', version: '1' });
  await client.connect(transport(kind, token));
  return client;
}

async function toolsOf(kind, client, who) {
  const listed = await client.listTools();
  listings[`${who} ${kind}`] = JSON.stringify(listed);
  return Object.fromEntries(listed.tools.map(t => [t.name, t]));
}

function valid(schema, value) {
  return validator.getValidator(schema)(value);
}

// One call, checked as a strict client checks it; the result, or null when the SDK refused it.
async function call(kind, tools, client, name, args, expected) {
  const where = `${kind} ${name} ${JSON.stringify(args)}`;
  let result;
  try {
    result = await client.callTool({ name, arguments: args });
  } catch (e) {
    failures.push(`${where}: the SDK rejected the result: ${e.message}`);
    return null;
  }
  // A tool this token may not use is not listed: it answers like one that does not exist.
  const tool = tools[name] ?? { inputSchema: { type: 'object' }, outputSchema: { type: 'object' } };
  const counts = (checked[kind] ??= { ok: 0, errors: 0, schema_checked: 0 });
  if (result.structuredContent !== undefined) {
    const check = valid(tool.outputSchema, result.structuredContent);
    expect(check.valid, `${where}: structured content off the outputSchema: ${check.errorMessage}`);
  }
  if (expected === 'ok') {
    const input = valid(tool.inputSchema, args);
    expect(input.valid, `${where}: arguments off the inputSchema: ${input.errorMessage}`);
    expect(!result.isError, `${where}: expected success, got ${JSON.stringify(result.content)}`);
    expect(result.structuredContent !== undefined, `${where}: no structured content`);
    counts.ok += 1;
  } else {
    expect(result.isError === true, `${where}: expected ${expected}, got success`);
    expect(result.structuredContent === undefined, `${where}: an error with structured content`);
    const text = result.content?.[0]?.text ?? '';
    const [code] = text.split(': ', 1);
    expect(CODES.has(code) && code === expected, `${where}: expected ${expected}, got "${text}"`);
    counts.errors += 1;
  }
  counts.schema_checked += 1;
  return result;
}

async function member(kind) {
  const client = await connect(kind, fixture.member);
  try {
    const tools = await toolsOf(kind, client, 'member');
    expect(JSON.stringify(Object.keys(tools).sort()) === JSON.stringify(MEMBER_TOOLS),
      `${kind}: member tools ${Object.keys(tools)}`);
    const c = (name, args, expected) => call(kind, tools, client, name, args, expected);
    await c('search_messages', { query: 'Acme', limit: 2 }, 'ok');
    await c('search_messages', { query: 'Acme', limit: 51 }, 'BAD_USER_INPUT');
    await c('search_messages', { query: 'Acme', cursor: 'not-a-cursor' }, 'INVALID_CURSOR');
    await c('search_messages', { query: 'a\u0000b' }, 'BAD_USER_INPUT');
    await c('read_conversation', { message_id: fixture.message }, 'ok');
    await c('read_conversation', { message_id: fixture.message, before: 51 }, 'BAD_USER_INPUT');
    await c('read_conversation', { message_id: 'TWVzc2FnZTo5ODc2NTQ' }, 'FORBIDDEN');
    await c('start_turn', { conversation: 'general', requester: 'alice' }, 'BAD_USER_INPUT');
  } finally {
    await client.close();
  }
}

async function agent(kind) {
  const client = await connect(kind, fixture.agent);
  try {
    const tools = await toolsOf(kind, client, 'agent');
    expect(JSON.stringify(Object.keys(tools).sort()) === JSON.stringify(AGENT_TOOLS),
      `${kind}: agent tools ${Object.keys(tools)}`);
    const c = (name, args, expected) => call(kind, tools, client, name, args, expected);
    const where = { conversation: fixture.conversation, requester: fixture.requester };
    const started = await c('start_turn', where, 'ok');
    await c('start_turn', { ...where, window: 101 }, 'BAD_USER_INPUT');
    await c('start_turn', { conversation: 'general', requester: 'nobody' }, 'FORBIDDEN');
    const turn = started?.structuredContent?.turn;
    await c('search_history', { turn, query: 'Acme' }, 'ok');
    await c('search_history', { turn, query: 'Acme', limit: 21 }, 'BAD_USER_INPUT');
    await c('search_history', { turn: 'garbage', query: 'Acme' }, 'FORBIDDEN');
    await c('post_reply', { turn, body: `From the TypeScript SDK over ${kind}` }, 'ok');
    await c('post_reply', { turn, body: 'x', client_id: '' }, 'BAD_USER_INPUT');
    await c('post_reply', { turn, body: 'a\u0000b' }, 'BAD_USER_INPUT');
  } finally {
    await client.close();
  }
}

async function badToken(kind) {
  let refused = null;
  try {
    const client = await connect(kind, 'rcm_w1.not-a-token');
    await client.close();
  } catch (e) {
    refused = e;
  }
  expect(refused !== null, `${kind}: a bad token connected`);
  if (kind === 'http') {
    expect(refused?.code === 401, `http: a bad token answered ${refused?.code} ${refused?.message}`);
    const answer = await fetch(fixture.url, {
      method: 'POST',
      headers: { Authorization: 'Bearer rcm_w1.not-a-token', 'content-type': 'application/json',
        accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    const challenge = answer.headers.get('www-authenticate') ?? '';
    const found = /resource_metadata="([^"]+)"/.exec(challenge);
    expect(answer.status === 401 && found, `http: 401 without resource_metadata: ${challenge}`);
    if (found) {
      const metadata = await (await fetch(found[1])).json();
      expect(JSON.stringify(metadata.bearer_methods_supported) === '["header"]'
        && metadata.resource === fixture.url, `http: metadata ${JSON.stringify(metadata)}`);
    }
  }
}

const BATCH = [
  { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
  { jsonrpc: '2.0', method: 'notifications/initialized' },
  { jsonrpc: '2.0', id: 2, method: 'tools/call',
    params: { name: 'search_messages', arguments: { query: 'Acme', limit: 51 } } },
];

function checkBatchAnswers(kind, answers) {
  const ids = answers.map(a => a.id);
  expect(JSON.stringify(ids) === '[1,2]', `${kind}: batch answered ids ${JSON.stringify(ids)}`);
  const error = answers.find(a => a.id === 2)?.result?.content?.[0]?.text ?? '';
  expect(error.startsWith('BAD_USER_INPUT: limit'), `${kind}: batch tool error "${error}"`);
}

async function httpBatches() {
  const t = new StreamableHTTPClientTransport(new URL(fixture.url), {
    requestInit: { headers: { Authorization: `Bearer ${fixture.member}` } },
  });
  const answers = [];
  t.onmessage = message => answers.push(message);
  await t.start();
  t.setProtocolVersion('2025-03-26');
  await t.send(BATCH);
  checkBatchAnswers('http', answers);
  t.setProtocolVersion('2025-06-18');
  try {
    await t.send(BATCH);
    failures.push('http: a batch at 2025-06-18 was answered');
  } catch (e) {
    expect(e.code === 400 && e.message.includes('-32600'), `http: batch refusal ${e.message}`);
  }
  await t.close();
  const bad = new StreamableHTTPClientTransport(new URL(fixture.url), {
    requestInit: { headers: { Authorization: 'Bearer rcm_w1.not-a-token' } },
  });
  await bad.start();
  try {
    await bad.send(BATCH);
    failures.push('http: a batch with a bad token was answered');
  } catch (e) {
    expect(e.code === 401, `http: a batch with a bad token: ${e.message}`);
  }
  await bad.close();
}

// `recall mcp` spoken to line by line: what the SDK's stdio transport cannot send.
async function stdioRaw(version) {
  const child = spawn(fixture.recall, ['mcp'], { env: stdioEnv(fixture.member), stdio: ['pipe', 'pipe', 'ignore'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const send = message => child.stdin.write(`${typeof message === 'string' ? message : JSON.stringify(message)}\n`);
  const receive = async () => JSON.parse((await lines.next()).value);
  send({ jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
  const init = await receive();
  expect(init.result?.protocolVersion === version, `stdio: negotiated ${JSON.stringify(init)}`);
  expect(JSON.stringify(Object.keys(init.result?.capabilities ?? {})) === '["tools"]',
    `stdio: capabilities ${JSON.stringify(init.result?.capabilities)}`);
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  send(BATCH);
  const answer = await receive();
  if (version === '2025-03-26') {
    checkBatchAnswers('stdio', Array.isArray(answer) ? answer : [answer]);
  } else {
    expect(answer.error?.code === -32600, `stdio: batch at ${version}: ${JSON.stringify(answer)}`);
  }
  send('this is not json');
  const parse = await receive();
  expect(parse.error?.code === -32700 && parse.id === null, `stdio: not JSON: ${JSON.stringify(parse)}`);
  child.stdin.end();
  await new Promise(resolve => child.on('exit', resolve));
}

for (const kind of ['http', 'stdio']) {
  await member(kind);
  await agent(kind);
  await badToken(kind);
}
for (const who of ['member', 'agent']) {
  expect(listings[`${who} http`] === listings[`${who} stdio`], `${who}: tools/list differs by transport`);
}
await httpBatches();
await stdioRaw('2025-03-26');
await stdioRaw('2025-06-18');

console.log(JSON.stringify({ failures, checked }));
process.exit(failures.length ? 1 : 0);
