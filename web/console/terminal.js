// A terminal in the browser (/terminal#/projects/P/workspaces/W): a shell in the signed-in
// user's own workspace login pod, run by the workspace's data plane's agent. Over a WebSocket
// (binary messages are the terminal's bytes both ways, text ones resizes; it closes saying why the
// shell ended; wss:// where the page is https); where a server says it serves no WebSockets, over
// long polls: what the shell writes is read from an offset (GET /terminals/{id}/output, so nothing is
// lost or shown twice), keystrokes and resizes are posted in the order typed. A page of its own:
// its renderer (xterm.js, from npm, compiled into the binary) writes style elements, which only
// this page's Content-Security-Policy allows.
import { api, messageOf } from "./api.js";
import { $ } from "./dom.js";
import { state } from "./state.js";

// Variables, so that type checking does not look for files that npm installs at build time.
const XTERM = "/console/xterm.mjs";
const FIT = "/console/addon-fit.mjs";

/** @param {string} text */
const status = (text) => { $("#terminal-status").textContent = text; };

/** @param {string} b64 */
function bytesOf(b64) {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

// The shell over a WebSocket joined by the server to one the agent opens.
class SocketSession {
  /** @param {any} term @param {string} url */
  constructor(term, url) {
    this.term = term;
    this.open = true;
    this.encoder = new TextEncoder();
    this.socket = new WebSocket(url);
    this.socket.binaryType = "arraybuffer";
    let connected = false;
    this.opened = new Promise((resolve) => {
      this.socket.onopen = () => { connected = true; resolve(true); };
      this.socket.onclose = (ev) => {
        resolve(false);
        const why = !connected ? "The terminal did not open: the workspace's data plane did not start the shell."
          : ev.code === 4401 ? "Closed: the sign-in expired; sign in again."
            : ev.reason ? `Closed: ${ev.reason}.` : `Disconnected (${ev.code}).`;
        this.ended(why);
      };
    });
    this.socket.onmessage = (ev) => this.term.write(new Uint8Array(ev.data));
  }

  readLoop() {}

  /** @param {string} keys */
  type(keys) {
    if (this.open && this.socket.readyState === WebSocket.OPEN) this.socket.send(this.encoder.encode(keys));
  }

  /** @param {number} cols @param {number} rows */
  resize(cols, rows) {
    if (this.open && this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify({ resize: { cols, rows } }));
  }

  close() {
    if (!this.open) return;
    this.socket.close(1000, "closed by its user");
    this.ended("Closed.");
  }

  /** @param {string} why */
  ended(why) {
    if (!this.open) return;
    this.open = false;
    status(why);
    this.term.options.disableStdin = true;
    $("#terminal-close").disabled = true;
  }
}

// The shell over long polls (the server serves no WebSockets).
class TerminalSession {
  /** @param {any} term @param {string} id */
  constructor(term, id) {
    this.term = term;
    this.path = `/api/v1/terminals/${id}`;
    this.offset = 0;
    this.open = true;
    // Input goes out one request at a time, in order; keys typed meanwhile go together.
    this.pending = "";
    this.sending = false;
  }

  async readLoop() {
    while (this.open) {
      try {
        const o = await api("GET", `${this.path}/output?offset=${this.offset}&wait=20`);
        if (o.data) this.term.write(bytesOf(o.data));
        this.offset = o.next;
        if (o.closed) return this.ended(`Closed: ${o.reason}.`);
      } catch (e) {
        return this.ended(`Disconnected: ${messageOf(e)}`);
      }
    }
  }

  /** @param {string} keys */
  type(keys) {
    if (!this.open) return;
    this.pending += keys;
    if (!this.sending) this.flush();
  }

  async flush() {
    this.sending = true;
    while (this.pending && this.open) {
      const data = this.pending;
      this.pending = "";
      try {
        await api("POST", `${this.path}/input`, { data });
      } catch (e) {
        this.ended(`Disconnected: ${messageOf(e)}`);
      }
    }
    this.sending = false;
  }

  /** @param {number} cols @param {number} rows */
  resize(cols, rows) {
    if (this.open) api("POST", `${this.path}/input`, { resize: { cols, rows } }).catch(() => {});
  }

  close() {
    if (!this.open) return;
    // keepalive: the request outlives a closing tab.
    fetch(this.path, { method: "DELETE", credentials: "same-origin", keepalive: true,
      headers: { "X-CSRF-Token": state.csrf } }).catch(() => {});
    this.ended("Closed.");
  }

  /** @param {string} why */
  ended(why) {
    this.open = false;
    status(why);
    this.term.options.disableStdin = true;
    $("#terminal-close").disabled = true;
  }
}

async function main() {
  const m = /^#\/projects\/([a-z][a-z0-9-]*)\/workspaces\/([a-z][a-z0-9-]*)$/.exec(location.hash);
  if (!m) return status("No workspace named: open a terminal from the console's Workspaces page.");
  const [, project, workspace] = m;
  $("#terminal-title").textContent = `Terminal — ${workspace}`;
  document.title = `${workspace} — hpcplane terminal`;
  let me;
  try {
    me = await api("GET", "/api/v1/session");
    state.me = me;
    state.csrf = me.csrfToken || "";
  } catch {
    return status("Not signed in: sign in to the console first, then open the terminal again.");
  }
  let xterm, fit;
  try {
    [xterm, fit] = await Promise.all([import(XTERM), import(FIT)]);
  } catch {
    return status("This build of hpcplane has no terminal: xterm.js was not installed from npm when it was built.");
  }
  const term = new xterm.Terminal({ cursorBlink: true, scrollback: 5000, convertEol: false,
    screenReaderMode: true, fontFamily: "ui-monospace, Menlo, Consolas, monospace", fontSize: 14 });
  const fitter = new fit.FitAddon();
  term.loadAddon(fitter);
  term.open($("#terminal"));
  fitter.fit();
  let session;
  try {
    const w = await api("GET", `/api/v1/projects/${project}/workspaces/${workspace}`);
    if (w.user !== state.me.subject) return status(`Workspace ${workspace} is ${w.user}'s; only they open a terminal in it.`);
    if (w.phase !== "Ready" || w.desired !== "Running") return status(`Workspace ${workspace} is ${w.phase}, not Ready.`);
    if (me.websockets) {
      const scheme = location.protocol === "https:" ? "wss:" : "ws:";
      session = new SocketSession(term, `${scheme}//${location.host}/api/v1/projects/${project}/workspaces/` +
        `${workspace}/terminal?cols=${term.cols}&rows=${term.rows}`);
      if (!await session.opened) return;
    } else {
      const t = await api("POST", `/api/v1/projects/${project}/workspaces/${workspace}/terminals`,
        { cols: term.cols, rows: term.rows });
      session = new TerminalSession(term, t.id);
    }
  } catch (e) {
    return status(messageOf(e));
  }
  status(`${state.me.subject} in workspace ${workspace} · Ctrl-D or Close ends the shell`);
  term.onData((/** @type {string} */ keys) => session.type(keys));
  term.onResize((/** @type {{cols: number, rows: number}} */ s) => session.resize(s.cols, s.rows));
  addEventListener("resize", () => fitter.fit());
  addEventListener("pagehide", () => session.close());
  $("#terminal-close").addEventListener("click", () => session.close());
  term.focus();
  session.readLoop();
}

main();
