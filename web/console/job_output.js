// A job's stdout and stderr in its detail, read on its data plane by the agent as the job's own
// user (GET .../output). The file's last 64 KiB first; while the job runs, what it writes next
// is appended every 2 s. A file that is gone or unreadable says so in place of the text.
import { api, messageOf } from "./api.js";
import { el } from "./dom.js";
import { fmtBytes, isLive } from "./format.js";

const CHUNK = 64 * 1024;
const FOLLOW_MS = 2000;
// The text kept on screen: the oldest part goes first past this.
const KEEP_CHARS = 1024 * 1024;

export class JobOutput {
  /** @param {string} jobPath @param {any} j */
  constructor(jobPath, j) {
    this.jobPath = jobPath;
    this.job = j;
    this.stream = "stdout";
    /** @type {number | null} */ this.next = null;
    this.timer = 0;
    this.generation = 0;  // a read that answers after the stream changed is dropped
    this.note = el("p", { class: "muted", id: "output-note", role: "status" }, "Loading…");
    this.text = el("pre", { class: "output", id: "output-text", tabindex: 0, "aria-label": "Job output" });
    this.tabs = ["stdout", "stderr"].map((s) => el("button", {
      type: "button", id: `output-${s}`, "aria-pressed": String(s === this.stream), onclick: () => this.show(s),
    }, s));
    this.box = el("section", { id: "job-output", "aria-label": "Output" },
      el("h2", {}, "Output"), el("div", { class: "pager" }, ...this.tabs), this.note, this.text);
  }

  /** @param {string} stream */
  show(stream) {
    this.stream = stream;
    for (const t of this.tabs) t.setAttribute("aria-pressed", String(t.id === `output-${stream}`));
    this.next = null;
    this.text.textContent = "";
    this.note.textContent = "Loading…";
    this.generation++;
    clearTimeout(this.timer);
    this.read(this.generation);
  }

  /** @param {number} generation */
  async read(generation) {
    // Closed, or another page: the box left the document and nothing follows any more.
    if (generation !== this.generation || (this.next !== null && !this.box.isConnected)) return;
    const from = this.next === null ? "" : `&offset=${this.next}`;
    let following;
    try {
      const o = await api("GET",
        `${this.jobPath}/output?submitTime=${this.job.submitTime}&stream=${this.stream}&limit=${CHUNK}${from}`);
      if (generation !== this.generation) return;
      if (this.next === null && o.offset > 0) this.text.textContent = `… (the first ${fmtBytes(o.offset)} not shown)\n`;
      this.append(o.text);
      this.next = o.nextOffset;
      following = isLive(o.state);
      const same = o.sameFile ? " (stderr goes to the same file as stdout)" : "";
      this.note.textContent = o.written === false
        // Queued: the file appears when the job starts; the page keeps asking until then.
        ? `${o.path}${same}: not written yet, the job is ${String(o.state).toLowerCase()}`
        : `${o.path}${same} · ${fmtBytes(o.size)}${following ? " · following while the job runs" : ""}`;
    } catch (e) {
      if (generation !== this.generation) return;
      this.note.textContent = messageOf(e);
      following = false;  // gone, unreadable or refused: final
    }
    if (following) this.timer = setTimeout(() => this.read(generation), FOLLOW_MS);
  }

  /** @param {string} more */
  append(more) {
    if (!more) return;
    const pre = this.text;
    const atBottom = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 24;
    let all = pre.textContent + more;
    if (all.length > KEEP_CHARS) all = "…\n" + all.slice(all.length - KEEP_CHARS);
    pre.textContent = all;
    if (atBottom) pre.scrollTop = pre.scrollHeight;
  }
}
