// Live push (docs/live.md): one graphql-transport-ws connection to this server's /graphql,
// shared by the tab's subscriptions (the open search, the open conversation).
//
// - The token goes in connection_init's payload; a socket the server closes with 4401 means the
//   token is no longer accepted (the page signs out).
// - Each subscription remembers the last `event` it received; after a lost connection it is
//   started again with `after` = that event, so what was committed meanwhile arrives, each
//   decided anew, with no gap and no duplicate. An `after` the log no longer reaches back to
//   answers INVALID_CURSOR: the subscription's owner searches again (onInvalidCursor).
// - The socket is opened with the first subscription, closed shortly after the last one ends,
//   pinged while idle (a connection that stopped answering is noticed), and opened again with
//   backoff after a loss.

const PROTOCOL = "graphql-transport-ws";
// Waits before the next attempt after a loss (ms), the last one repeated; each ±20%.
const BACKOFF = [300, 1000, 2000, 5000, 10000, 20000];
// A ping this often while open, and a pong expected within PONG_MS.
const PING_MS = 20000;
const PONG_MS = 10000;
// The socket stays open this long after the last subscription ended (a new search follows).
const LINGER_MS = 3000;
// Close codes (docs/live.md): the token was refused.
const UNAUTHORIZED = 4401;

/**
 * statuses: "idle" (no socket: nothing subscribed), "connecting" (the first time), "live",
 * "reconnecting" (the connection was lost and is being opened again).
 */
export class LiveConnection {
  constructor(token, { onStatus = () => {}, onAuthError = () => {}, url = defaultUrl() } = {}) {
    this.token = token;
    this.url = url;
    this.onStatus = onStatus;
    this.onAuthError = onAuthError;
    this.status = "idle";
    this.socket = null;
    this.acked = false;
    this.subscriptions = new Map();
    this.nextId = 1;
    this.attempt = 0;
    this.lost = false;
    this.closed = false;
    this.retryTimer = null;
    this.lingerTimer = null;
    this.pingTimer = null;
    this.pongTimer = null;
    this.onOnline = () => {
      if (this.lost && !this.socket) this.open();
    };
    window.addEventListener("online", this.onOnline);
  }

  /**
   * Start `query` with `variables` (its `after` is managed here: `after` in `variables` is the
   * starting position). `handlers.next(data)` gets each update's one field; `handlers.error`
   * an ApiError-like {message, code} (the subscription has ended); `handlers.onInvalidCursor()`
   * when a resume is refused because the log no longer reaches back (the subscription has
   * ended: search again). Returns a function that ends it.
   */
  subscribe(query, variables, handlers) {
    const sub = { id: String(this.nextId++), query, variables: { ...variables }, handlers, active: true };
    this.subscriptions.set(sub.id, sub);
    window.clearTimeout(this.lingerTimer);
    if (!this.socket) this.open();
    else if (this.acked) this.start(sub);
    return () => this.end(sub);
  }

  close() {
    this.closed = true;
    window.removeEventListener("online", this.onOnline);
    window.clearTimeout(this.retryTimer);
    window.clearTimeout(this.lingerTimer);
    this.subscriptions.clear();
    this.drop(1000, "closed");
    this.setStatus("idle");
  }

  // --- internals ---

  setStatus(status) {
    if (this.status === status) return;
    this.status = status;
    this.onStatus(status);
  }

  open() {
    if (this.closed || this.socket) return;
    window.clearTimeout(this.retryTimer);
    this.setStatus(this.lost ? "reconnecting" : "connecting");
    let socket;
    try {
      socket = new WebSocket(this.url, PROTOCOL);
    } catch {
      this.lose();
      return;
    }
    this.socket = socket;
    this.acked = false;
    socket.onopen = () => {
      this.send({ type: "connection_init", payload: { Authorization: `Bearer ${this.token}` } });
    };
    socket.onmessage = (event) => this.receive(event.data);
    socket.onclose = (event) => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.acked = false;
      this.stopPinging();
      if (event.code === UNAUTHORIZED) {
        this.closed = true;
        this.setStatus("idle");
        this.onAuthError();
        return;
      }
      this.lose();
    };
    socket.onerror = () => {
      // onclose follows.
    };
  }

  lose() {
    this.socket = null;
    if (this.closed) return;
    if (this.subscriptions.size === 0) {
      this.lost = false;
      this.setStatus("idle");
      return;
    }
    this.lost = true;
    this.setStatus("reconnecting");
    const base = BACKOFF[Math.min(this.attempt, BACKOFF.length - 1)];
    this.attempt += 1;
    const wait = base * (0.8 + Math.random() * 0.4);
    this.retryTimer = window.setTimeout(() => this.open(), wait);
  }

  drop(code, reason) {
    const socket = this.socket;
    this.socket = null;
    this.acked = false;
    this.stopPinging();
    if (socket) {
      socket.onclose = null;
      socket.onmessage = null;
      try {
        socket.close(code, reason);
      } catch {
        // Already closing.
      }
    }
  }

  send(message) {
    if (this.socket && this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  start(sub) {
    this.send({ id: sub.id, type: "subscribe", payload: { query: sub.query, variables: sub.variables } });
  }

  end(sub) {
    if (!sub.active) return;
    if (this.acked) this.send({ id: sub.id, type: "complete" });
    this.release(sub);
  }

  release(sub) {
    sub.active = false;
    this.subscriptions.delete(sub.id);
    if (this.subscriptions.size === 0) {
      window.clearTimeout(this.lingerTimer);
      this.lingerTimer = window.setTimeout(() => {
        if (this.subscriptions.size > 0) return;
        window.clearTimeout(this.retryTimer);
        this.lost = false;
        this.attempt = 0;
        this.drop(1000, "nothing subscribed");
        this.setStatus("idle");
      }, LINGER_MS);
    }
  }

  receive(raw) {
    let message;
    try {
      message = JSON.parse(raw);
    } catch {
      return;
    }
    const type = message.type;
    if (type === "connection_ack") {
      this.acked = true;
      this.attempt = 0;
      this.lost = false;
      this.setStatus("live");
      this.startPinging();
      for (const sub of this.subscriptions.values()) this.start(sub);
      return;
    }
    if (type === "ping") {
      this.send({ type: "pong" });
      return;
    }
    if (type === "pong") {
      window.clearTimeout(this.pongTimer);
      return;
    }
    const sub = this.subscriptions.get(message.id);
    if (!sub) return;
    if (type === "next") {
      const payload = message.payload || {};
      if (payload.errors && payload.errors.length) {
        this.fail(sub, payload.errors[0]);
        return;
      }
      const data = payload.data && Object.values(payload.data)[0];
      if (!data) return;
      if (data.event) sub.variables = { ...sub.variables, after: data.event };
      sub.handlers.next(data);
    } else if (type === "error") {
      this.fail(sub, (message.payload || [])[0] || {});
    } else if (type === "complete") {
      // The server ended it without an error: nothing more will come for it.
      this.release(sub);
    }
  }

  fail(sub, error) {
    this.release(sub);
    const code = error.extensions && error.extensions.code;
    if (code === "UNAUTHENTICATED") {
      this.onAuthError();
    } else if (code === "INVALID_CURSOR") {
      if (sub.handlers.onInvalidCursor) sub.handlers.onInvalidCursor();
    } else if (sub.handlers.error) {
      sub.handlers.error({ message: error.message || "Live updates stopped.", code });
    }
  }

  startPinging() {
    this.stopPinging();
    this.pingTimer = window.setInterval(() => {
      this.send({ type: "ping" });
      window.clearTimeout(this.pongTimer);
      this.pongTimer = window.setTimeout(() => {
        // No answer: the connection is gone without saying so.
        this.drop(4000, "no pong");
        this.lose();
      }, PONG_MS);
    }, PING_MS);
  }

  stopPinging() {
    window.clearInterval(this.pingTimer);
    window.clearTimeout(this.pongTimer);
  }
}

function defaultUrl() {
  const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${window.location.host}/graphql`;
}
