// A project's HPC jobs (or every project's, for admins): filters, the newest first in keyset
// pages, array tasks grouped under their array, a job's detail, exports, Run, and charts. The
// first page refreshes every 15 s.
import { api, messageOf } from "./api.js";
import { activateOnKeys, el, mainArea, tableWrap } from "./dom.js";
import { fmtDuration, fmtTime, groupArrays, jobsQuery, sameJob, stateCounts } from "./format.js";
import { loadCharts } from "./charts.js";
import { showJobDetail, stateCell } from "./job_detail.js";
import { runButton } from "./run_form.js";
import { ALL_PROJECTS, every, jobsBase, state } from "./state.js";

const SLURM_STATES = ["PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
  "OUT_OF_MEMORY", "PREEMPTED", "REQUEUED", "SUSPENDED", "BOOT_FAIL", "DEADLINE"];
const COLUMNS = ["Job", "Name", "User", "State", "Workspace", "Source", "Submitted", "Started", "Elapsed", "Nodes"];
// Every project's list has the project after the user.
const ALL_COLUMNS = [...COLUMNS.slice(0, 3), "Project", ...COLUMNS.slice(3)];
const NARROW_AFTER = 3;  // the last columns, from Started on, are hidden on narrow screens

class JobsList {
  /** @param {string} project */
  constructor(project) {
    this.project = project;
    this.all = project === ALL_PROJECTS;
    this.columns = this.all ? ALL_COLUMNS : COLUMNS;
    /** @type {Record<string, string>} */
    this.filters = { user: "", state: "", workspace: "", name: "", from: "", to: "", sort: "" };
    /** @type {Array<string | null>} cursor of each page shown so far; the last is the current page's */
    this.cursors = [null];
    this.page = 0;
    /** @type {any} */
    this.openJob = null;
    // Which array groups are open survives the refresh.
    /** @type {Set<string>} */
    this.openArrays = new Set();
    this.status = el("p", { class: "muted", id: "jobs-status", "aria-live": "polite" });
    this.tbody = el("tbody", { id: "jobs-body" });
    this.prev = el("button", { type: "button", id: "prev-page", onclick: () => this.turn(-1) }, "← Newer");
    this.next = el("button", { type: "button", id: "next-page", onclick: () => this.turn(1) }, "Older →");
    /** @param {string} fmt */
    const exportLink = (fmt) => el("a", { class: "button", id: `export-${fmt}`, href: "#" }, `Export ${fmt.toUpperCase()}`);
    this.csv = exportLink("csv");
    this.ndjson = exportLink("ndjson");
    this.detail = el("section", { id: "job-detail", "aria-label": "Job detail" });
  }

  /** @param {number} by */
  turn(by) {
    this.page += by;
    this.load();
  }

  filterForm() {
    /** @param {string} name @param {string} label @param {Record<string, any>} [attrs] */
    const input = (name, label, attrs = {}) => el("label", { for: `f-${name}` }, label,
      el("input", { id: `f-${name}`, name, ...attrs }));
    const stateSelect = el("select", { id: "f-state", name: "state" }, el("option", { value: "" }, "any"),
      SLURM_STATES.map((s) => el("option", { value: s }, s)));
    const sortSelect = el("select", { id: "f-sort", name: "sort" }, el("option", { value: "" }, "submitted"),
      el("option", { value: "start" }, "started"), el("option", { value: "end" }, "ended"));
    const form = el("form", { class: "filters", role: "search", "aria-label": "Filter jobs",
      onsubmit: (/** @type {Event} */ ev) => {
        ev.preventDefault();
        const data = new FormData(form);
        for (const k of Object.keys(this.filters)) this.filters[k] = String(data.get(k) || "").trim();
        this.cursors.length = 1;
        this.page = 0;
        this.load();
      } },
    input("name", "Name contains", { type: "search", maxlength: 200 }),
    input("user", "User", { pattern: "[a-z][a-z0-9\\-]*" }),
    el("label", { for: "f-state" }, "State", stateSelect),
    input("workspace", "Workspace", { pattern: "[a-z][a-z0-9\\-]*" }),
    input("from", "Submitted from", { type: "date" }),
    input("to", "to (exclusive)", { type: "date" }),
    el("label", { for: "f-sort" }, "Newest first by", sortSelect),
    el("button", { type: "submit", class: "primary" }, "Apply"));
    return form;
  }

  table() {
    return tableWrap("HPC jobs", el("table", { id: "jobs-table" },
      el("caption", { class: "visually-hidden", id: "jobs-caption" },
        this.all ? "HPC jobs of every project, newest first" : `HPC jobs of project ${this.project}, newest first`),
      el("thead", {}, el("tr", {}, this.columns.map((h, i) => el("th", { scope: "col",
        class: i >= this.columns.length - NARROW_AFTER ? "hide-narrow" : null }, h)))),
      this.tbody));
  }

  async load(quiet = false) {
    const base = jobsBase(this.project);
    this.csv.href = `${base}/export?${jobsQuery(this.filters, { format: "csv" })}`;
    this.ndjson.href = `${base}/export?${jobsQuery(this.filters, { format: "ndjson" })}`;
    if (!quiet) this.status.textContent = "Loading…";
    try {
      const data = await api("GET", `${base}?${jobsQuery(this.filters, { limit: "50", cursor: this.cursors[this.page] })}`);
      this.cursors[this.page + 1] = data.nextCursor;
      this.cursors.length = this.page + 2;
      this.render(data.jobs);
      this.prev.disabled = this.page === 0;
      this.next.disabled = !data.nextCursor;
      this.status.textContent = `Page ${this.page + 1}: ${data.jobs.length} job${data.jobs.length === 1 ? "" : "s"}` +
        (this.page === 0 ? " · refreshes every 15 s" : "");
    } catch (e) {
      this.status.textContent = "";
      this.tbody.replaceChildren(el("tr", {}, el("td", { colspan: this.columns.length, class: "error", role: "alert" }, messageOf(e))));
    }
  }

  /** @param {any[]} jobs */
  render(jobs) {
    const rows = groupArrays(jobs).flatMap((r) => ("job" in r ? [this.jobRow(r.job)]
      : [this.arrayRow(r.tasks, r.group), ...r.tasks.map((t) => this.jobRow(t, r.group))]));
    if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: this.columns.length, class: "muted" }, "No jobs match.")));
    this.tbody.replaceChildren(...rows);
    const shown = this.openJob;
    if (!shown) return;
    const again = jobs.find((j) => sameJob(j, shown));
    // Re-rendered only when the job changed: a note (a cancel in flight) survives a refresh.
    if (again && JSON.stringify(again) !== JSON.stringify(shown)) this.show(again, false);
  }

  /** @param {any} j @param {string} [group] */
  jobRow(j, group) {
    const key = `${j.dataPlane}/${j.cluster}/${j.jobId}/${j.submitTime}`;
    const open = () => this.show(j);
    const id = j.arrayJobId ? `${j.arrayJobId}_${j.arrayTaskId}` : String(j.jobId);
    return el("tr", { class: group ? "job task" : "job", tabindex: 0, "data-key": key, "data-group": group || null,
      hidden: group && !this.openArrays.has(group) ? "" : null, "aria-label": `Job ${id} ${j.name}`,
      onclick: open, onkeydown: activateOnKeys(open) },
    el("td", {}, id), el("td", {}, j.name), el("td", {}, j.user), this.all ? el("td", {}, j.project) : null,
    el("td", {}, stateCell(j.state)),
    el("td", {}, j.partition), el("td", {}, j.source), el("td", {}, fmtTime(j.submitTime)),
    el("td", { class: "hide-narrow" }, fmtTime(j.startTime)),
    el("td", { class: "hide-narrow" }, fmtDuration(j.elapsedSeconds)),
    el("td", { class: "hide-narrow" }, String(j.nodes || "")));
  }

  // The row of an array's tasks on this page: a toggle that shows or hides them, and a summary.
  /** @param {any[]} tasks @param {string} group */
  arrayRow(tasks, group) {
    const first = tasks[0];
    const toggle = el("button", { type: "button", class: "array-toggle", "aria-expanded": String(this.openArrays.has(group)),
      onclick: (/** @type {Event} */ ev) => {
        ev.stopPropagation();
        if (this.openArrays.has(group)) this.openArrays.delete(group); else this.openArrays.add(group);
        const opened = this.openArrays.has(group);
        toggle.setAttribute("aria-expanded", String(opened));
        for (const r of this.tbody.querySelectorAll(`tr[data-group="${group}"]`)) r.hidden = !opened;
      } }, `Array ${first.arrayJobId}`);
    return el("tr", { class: "array", "data-array": group },
      el("td", {}, toggle), el("td", {}, first.name), el("td", {}, first.user),
      el("td", { colspan: this.columns.length - 3 }, `${tasks.length} task${tasks.length === 1 ? "" : "s"} here: ${stateCounts(tasks)}`));
  }

  /** @param {any} j */
  show(j, focus = true) {
    this.openJob = j;
    showJobDetail(this.detail, this.all ? j.project : this.project, j, focus, () => { this.openJob = null; });
  }
}

export function jobsPage() {
  const project = state.project;
  const list = new JobsList(project);
  const run = el("section", { id: "run", "aria-label": "Run a job" });
  const charts = el("section", { id: "charts", "aria-label": "Charts" });
  mainArea().replaceChildren(el("h1", {}, `HPC jobs — ${list.all ? "all projects" : project}`), run, list.filterForm(),
    el("div", { class: "pager" }, list.prev, list.next, list.csv, list.ndjson, list.status), list.detail, list.table(),
    charts);
  // Run needs a project to run in.
  if (!list.all) runButton(project, run, () => list.load(true));
  list.load();
  loadCharts(jobsBase(project), list.all, charts);
  every(() => { if (list.page === 0 && !document.hidden) list.load(true); }, 15000);
}
