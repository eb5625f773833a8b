// hpcplane web console: one ES module, no framework, no build step. It speaks only the public
// REST API (/api/v1), signed in through a session cookie (HttpOnly: this script never sees the
// token); state-changing requests carry the session's CSRF token. Text from the API is always
// set as textContent, never parsed as HTML.

const $ = (sel) => document.querySelector(sel);
const main = $("#main");
const state = { me: null, csrf: "", project: "", refreshTimer: 0 };

// --- API -------------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error && body.error.message) || `HTTP ${status}`);
    this.status = status;
    this.field = body && body.error && body.error.field;
  }
}

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET") headers["X-CSRF-Token"] = state.csrf;
  const res = await fetch(path, {
    method, headers, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await res.json().catch(() => null);
  if (!res.ok) {
    if (res.status === 401 && path !== "/api/v1/session") showSignIn("Your session ended; sign in again.");
    throw new ApiError(res.status, data);
  }
  return data;
}

// --- small DOM helpers -----------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c !== undefined && c !== null) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function toast(msg) {
  $("#toast").textContent = msg;
  setTimeout(() => { if ($("#toast").textContent === msg) $("#toast").textContent = ""; }, 5000);
}

const fmtTime = (t) => (t ? new Date(t * 1000).toISOString().replace("T", " ").slice(0, 19) : "—");
function fmtDuration(s) {
  if (!s && s !== 0) return "—";
  const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  const hms = `${String(h).padStart(2, "0")}:${String(m).padStart(2, "0")}:${String(sec).padStart(2, "0")}`;
  return d ? `${d}-${hms}` : hms;
}
function fmtKiB(k) {
  if (!k) return "—";
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let i = 0, v = k;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${v.toFixed(v < 10 && i ? 1 : 0)} ${units[i]}`;
}
// Slurm's memory request from AllocTRES ("mem=4G") in KiB, or 0.
function tresMemKiB(tres) {
  const m = /(?:^|,)mem=([\d.]+)([KMGT]?)/.exec(tres || "");
  if (!m) return 0;
  return parseFloat(m[1]) * ({ "": 1024, K: 1, M: 1024, G: 1024 ** 2, T: 1024 ** 3 })[m[2]];
}
const tresCpus = (tres) => Number((/(?:^|,)cpu=(\d+)/.exec(tres || "") || [])[1] || 0);
const stateCell = (s) => el("span", { class: `state state-${(s || "").split(" ")[0]}` }, s);

// --- sign-in -----------------------------------------------------------------------------------

function showSignIn(message) {
  clearInterval(state.refreshTimer);
  state.me = null;
  $("#nav").hidden = true;
  $("#who").hidden = true;
  const error = el("p", { class: "error", role: "alert", id: "signin-error" }, message || "");
  const token = el("input", { id: "token", type: "password", autocomplete: "off", required: true, "aria-describedby": "signin-error" });
  const form = el("form", { class: "signin", onsubmit: async (ev) => {
    ev.preventDefault();
    error.textContent = "";
    try {
      const me = await api("POST", "/api/v1/session", { token: token.value });
      token.value = "";
      await signedIn(me);
    } catch (e) {
      error.textContent = e.message;
    }
  } },
  el("label", { for: "token" }, "API token", token),
  el("button", { class: "primary", type: "submit", id: "sign-in" }, "Sign in"));
  main.replaceChildren(el("h1", {}, "Sign in"),
    el("p", { class: "muted" }, "Paste an API token (hpcplane tokens create). It is exchanged for a session; the page never keeps it."),
    form, error);
  token.focus();
}

async function signedIn(me) {
  state.me = me;
  state.csrf = me.csrfToken || "";
  $("#who-name").textContent = `${me.subject} (${me.role})`;
  $("#who").hidden = false;
  $("#nav").hidden = false;
  for (const a of document.querySelectorAll("[data-admin]")) a.hidden = me.role !== "admin";
  const { projects } = await api("GET", "/api/v1/projects");
  const select = $("#project-select");
  select.replaceChildren(...projects.map((p) => el("option", { value: p }, p)));
  const fromHash = /^#\/projects\/([a-z][a-z0-9-]*)/.exec(location.hash);
  state.project = fromHash && projects.includes(fromHash[1]) ? fromHash[1] : projects[0] || "";
  select.value = state.project;
  if (!location.hash || location.hash === "#/") location.hash = "#/jobs";
  else route();
}

$("#sign-out").addEventListener("click", async () => {
  try { await api("DELETE", "/api/v1/session"); } catch (e) { /* signed out either way */ }
  state.csrf = "";
  history.replaceState(null, "", "#/");
  showSignIn("Signed out.");
});

$("#project-select").addEventListener("change", (ev) => {
  state.project = ev.target.value;
  route();
});

// --- routing -----------------------------------------------------------------------------------

function route() {
  clearInterval(state.refreshTimer);
  if (!state.me) return;
  const page = (location.hash.replace(/^#\//, "").split(/[/?]/)[0]) || "jobs";
  for (const a of document.querySelectorAll("nav a[data-page]")) {
    if (a.dataset.page === page) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (page === "dataplanes") return dataPlanesPage();
  if (page === "admin") return adminPage();
  if (page === "workspaces") return workspacesPage();
  return jobsPage();
}
window.addEventListener("hashchange", route);

function noProject() {
  main.replaceChildren(el("h1", {}, "No project"),
    el("p", {}, "Your token belongs to no project. An admin adds you to one (hpcplane tokens create --project …)."));
}

// --- HPC jobs ----------------------------------------------------------------------------------

const SLURM_STATES = ["PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
  "OUT_OF_MEMORY", "PREEMPTED", "REQUEUED", "SUSPENDED", "BOOT_FAIL", "DEADLINE"];

function jobsPage() {
  if (!state.project) return noProject();
  const project = state.project;
  const filters = { user: "", state: "", workspace: "", name: "", from: "", to: "", sort: "" };
  const cursors = [null];  // cursor of each page shown so far; the last is the current page's
  let page = 0;
  let openJob = null;

  const input = (name, label, attrs = {}) => el("label", { for: `f-${name}` }, label,
    el("input", { id: `f-${name}`, name, ...attrs }));
  const stateSelect = el("select", { id: "f-state", name: "state" }, el("option", { value: "" }, "any"),
    SLURM_STATES.map((s) => el("option", { value: s }, s)));
  const sortSelect = el("select", { id: "f-sort", name: "sort" }, el("option", { value: "" }, "submitted"),
    el("option", { value: "start" }, "started"), el("option", { value: "end" }, "ended"));
  const form = el("form", { class: "filters", role: "search", "aria-label": "Filter jobs", onsubmit: (ev) => {
    ev.preventDefault();
    const data = new FormData(form);
    for (const k of Object.keys(filters)) filters[k] = (data.get(k) || "").trim();
    cursors.length = 1;
    page = 0;
    load();
  } },
  input("name", "Name contains", { type: "search", maxlength: 200 }),
  input("user", "User", { pattern: "[a-z][a-z0-9\\-]*" }),
  el("label", { for: "f-state" }, "State", stateSelect),
  input("workspace", "Workspace", { pattern: "[a-z][a-z0-9\\-]*" }),
  input("from", "Submitted from", { type: "date" }),
  input("to", "to (exclusive)", { type: "date" }),
  el("label", { for: "f-sort" }, "Newest first by", sortSelect),
  el("button", { type: "submit", class: "primary" }, "Apply"));

  const status = el("p", { class: "muted", id: "jobs-status", "aria-live": "polite" });
  const tbody = el("tbody", { id: "jobs-body" });
  const table = el("div", { class: "table-wrap" }, el("table", { id: "jobs-table" },
    el("caption", { class: "visually-hidden", id: "jobs-caption" }, `HPC jobs of project ${project}, newest first`),
    el("thead", {}, el("tr", {}, ["Job", "Name", "User", "State", "Workspace", "Source", "Submitted",
      "Started", "Elapsed", "Nodes"].map((h, i) => el("th", { scope: "col", class: i >= 7 ? "hide-narrow" : null }, h)))),
    tbody));
  const prev = el("button", { type: "button", id: "prev-page", onclick: () => { page--; load(); } }, "← Newer");
  const next = el("button", { type: "button", id: "next-page", onclick: () => { page++; load(); } }, "Older →");
  const exportLink = (fmt) => el("a", { class: "button", id: `export-${fmt}`, href: "#" }, `Export ${fmt.toUpperCase()}`);
  const csv = exportLink("csv"), ndjson = exportLink("ndjson");
  const detail = el("section", { id: "job-detail", "aria-label": "Job detail" });
  const charts = el("section", { class: "charts", id: "charts", "aria-label": "Charts" });

  const run = el("section", { id: "run", "aria-label": "Run a job" });
  main.replaceChildren(el("h1", {}, `HPC jobs — ${project}`), run, form,
    el("div", { class: "pager" }, prev, next, csv, ndjson, status), detail, table, charts);
  runButton(project, run, () => load(true));

  function query(extra = {}) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(filters)) {
      if (!v) continue;
      if (k === "from" || k === "to") q.set(k, String(Math.floor(Date.parse(v + "T00:00:00Z") / 1000)));
      else q.set(k, v);
    }
    for (const [k, v] of Object.entries(extra)) if (v) q.set(k, v);
    return q;
  }

  async function load(quiet = false) {
    const q = query({ limit: "50", cursor: cursors[page] });
    const base = `/api/v1/projects/${project}/jobs`;
    csv.href = `${base}/export?${query({ format: "csv" })}`;
    ndjson.href = `${base}/export?${query({ format: "ndjson" })}`;
    if (!quiet) status.textContent = "Loading…";
    try {
      const data = await api("GET", `${base}?${q}`);
      cursors[page + 1] = data.nextCursor;
      cursors.length = page + 2;
      renderRows(data.jobs);
      prev.disabled = page === 0;
      next.disabled = !data.nextCursor;
      status.textContent = `Page ${page + 1}: ${data.jobs.length} job${data.jobs.length === 1 ? "" : "s"}` +
        (page === 0 ? " · refreshes every 15 s" : "");
    } catch (e) {
      status.textContent = "";
      tbody.replaceChildren(el("tr", {}, el("td", { colspan: 10, class: "error", role: "alert" }, e.message)));
    }
  }

  // Array tasks (shown by Slurm as 123_4) come grouped under a row for their array: the tasks of
  // one array share a submit time, so a page lists them together. The group opens and closes;
  // which are open survives the 15 s refresh.
  const openArrays = new Set();
  function jobRow(j, group) {
    const key = `${j.dataPlane}/${j.cluster}/${j.jobId}/${j.submitTime}`;
    const open = () => showDetail(j);
    const id = j.arrayJobId ? `${j.arrayJobId}_${j.arrayTaskId}` : String(j.jobId);
    return el("tr", { class: group ? "job task" : "job", tabindex: 0, "data-key": key, "data-group": group || null,
      hidden: group && !openArrays.has(group) ? "" : null, "aria-label": `Job ${id} ${j.name}`,
      onclick: open, onkeydown: (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); open(); } } },
      el("td", {}, id), el("td", {}, j.name), el("td", {}, j.user), el("td", {}, stateCell(j.state)),
      el("td", {}, j.partition), el("td", {}, j.source), el("td", {}, fmtTime(j.submitTime)),
      el("td", { class: "hide-narrow" }, fmtTime(j.startTime)),
      el("td", { class: "hide-narrow" }, fmtDuration(j.elapsedSeconds)),
      el("td", { class: "hide-narrow" }, String(j.nodes || "")));
  }
  function arrayRow(tasks, group) {
    const counts = {};
    for (const t of tasks) counts[t.state] = (counts[t.state] || 0) + 1;
    const summary = Object.entries(counts).map(([s, n]) => `${n} ${s}`).join(", ");
    const first = tasks[0];
    const toggle = el("button", { type: "button", class: "array-toggle", "aria-expanded": String(openArrays.has(group)),
      onclick: (ev) => {
        ev.stopPropagation();
        if (openArrays.has(group)) openArrays.delete(group); else openArrays.add(group);
        const opened = openArrays.has(group);
        toggle.setAttribute("aria-expanded", String(opened));
        for (const r of tbody.querySelectorAll(`tr[data-group="${group}"]`)) r.hidden = !opened;
      } }, `Array ${first.arrayJobId}`);
    return el("tr", { class: "array", "data-array": group },
      el("td", {}, toggle), el("td", {}, first.name), el("td", {}, first.user),
      el("td", { colspan: 7 }, `${tasks.length} task${tasks.length === 1 ? "" : "s"} here: ${summary}`));
  }
  function renderRows(jobs) {
    const rows = [];
    for (let i = 0; i < jobs.length;) {
      const j = jobs[i];
      let k = i + 1;
      if (j.arrayJobId) {
        while (k < jobs.length && jobs[k].arrayJobId === j.arrayJobId && jobs[k].cluster === j.cluster &&
          jobs[k].dataPlane === j.dataPlane) k++;
      }
      if (k - i > 1) {
        const group = `${j.dataPlane}/${j.cluster}/${j.arrayJobId}`;
        const tasks = jobs.slice(i, k);
        rows.push(arrayRow(tasks, group), ...tasks.map((t) => jobRow(t, group)));
      } else {
        rows.push(jobRow(j));
      }
      i = k;
    }
    if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: 10, class: "muted" }, "No jobs match.")));
    tbody.replaceChildren(...rows);
    if (openJob) {
      const again = jobs.find((j) => j.jobId === openJob.jobId && j.submitTime === openJob.submitTime &&
        j.cluster === openJob.cluster && j.dataPlane === openJob.dataPlane);
      // Re-rendered only when the job changed: a note (a cancel in flight) survives a refresh.
      if (again && JSON.stringify(again) !== JSON.stringify(openJob)) showDetail(again, false);
    }
  }

  function showDetail(j, focus = true) {
    openJob = j;
    const cpus = tresCpus(j.tres);
    const eff = j.elapsedSeconds && cpus ? `${((100 * j.cpuSeconds) / (j.elapsedSeconds * cpus)).toFixed(1)} %` : "—";
    const memReq = tresMemKiB(j.tres);
    const rss = j.maxRssKiB ? `${fmtKiB(j.maxRssKiB)}${memReq ? ` of ${fmtKiB(memReq)} requested (${((100 * j.maxRssKiB) / memReq).toFixed(1)} %)` : ""}` : "—";
    const [code, signal] = (j.exitCode || ":").split(":");
    const item = (k, v) => [el("dt", {}, k), el("dd", {}, v)];
    const close = el("button", { type: "button", id: "close-detail", onclick: () => { openJob = null; detail.replaceChildren(); } }, "Close");
    const live = ["PENDING", "RUNNING", "SUSPENDED", "REQUEUED", "CONFIGURING", "COMPLETING"].includes((j.state || "").split(" ")[0]);
    const mayCancel = live && (j.user === state.me.subject || state.me.role === "admin");
    const cancelNote = el("span", { id: "cancel-note", role: "status" });
    const cancel = mayCancel ? el("button", { type: "button", id: "cancel-job", onclick: async () => {
      if (!confirm(`Cancel job ${j.jobId} (${j.name})?`)) return;
      try {
        const c = await api("POST", `/api/v1/projects/${project}/jobs/${j.dataPlane}/${j.cluster}/${j.jobId}/cancel?submitTime=${j.submitTime}`);
        cancelNote.textContent = "Cancel requested; the data plane runs scancel shortly.";
        watchCancellation(project, c.id, cancelNote);
      } catch (e) {
        cancelNote.textContent = e.message;
      }
    } }, "Cancel job") : "";
    detail.replaceChildren(el("div", { class: "detail" },
      el("h2", { tabindex: -1, id: "detail-title" }, `Job ${j.jobId}: ${j.name || "(no name)"}`),
      el("ol", { class: "timeline", "aria-label": "Timeline" },
        el("li", {}, `submitted ${fmtTime(j.submitTime)}`),
        el("li", {}, `started ${fmtTime(j.startTime)}`),
        el("li", {}, `ended ${fmtTime(j.endTime)}`)),
      el("dl", {},
        item("State", stateCell(j.state)),
        item("Queue wait", j.startTime ? fmtDuration(j.startTime - j.submitTime) : "—"),
        item("Elapsed", fmtDuration(j.elapsedSeconds)),
        item("CPU time", fmtDuration(j.cpuSeconds)),
        item("CPU efficiency", eff),
        item("Max RSS", rss),
        item("Exit code", `${code || "—"}${signal && signal !== "0" ? ` (signal ${signal})` : ""}`),
        item("Nodes", `${j.nodes || 0} ${j.nodeList || ""}`),
        item("TRES", j.tres || "—"),
        item("Workspace / partition", j.partition),
        item("User", j.user),
        item("Source", j.source === "api" ? "API submission" : "workspace CLI"),
        item("Data plane / cluster", `${j.dataPlane} / ${j.cluster}`)),
      el("div", { class: "pager" }, cancel, close, cancelNote)));
    if (j.source === "api" && (j.user === state.me.subject || state.me.role === "admin")) {
      const box = el("section", { id: "job-script", "aria-label": "Batch script" });
      detail.firstChild.append(box);
      api("GET", `/api/v1/projects/${project}/jobs/${j.dataPlane}/${j.cluster}/${j.jobId}/script?submitTime=${j.submitTime}`)
        .then((s) => box.replaceChildren(el("h2", {}, "Batch script"),
          el("p", { class: "muted" }, `sbatch ${s.sbatchArgs.join(" ")}`), el("pre", {}, s.script)))
        .catch((e) => box.replaceChildren(el("p", { class: "muted" }, e.message)));
    }
    if (focus) $("#detail-title").focus();
  }

  load();
  loadCharts(project, charts);
  state.refreshTimer = setInterval(() => { if (page === 0 && !document.hidden) load(true); }, 15000);
}

// Follows a cancellation until its data plane settled it.
async function watchCancellation(project, id, note) {
  for (let i = 0; i < 60; i++) {
    await new Promise((r) => setTimeout(r, 2000));
    try {
      const c = await api("GET", `/api/v1/projects/${project}/cancellations/${id}`);
      if (c.state === "Pending") continue;
      note.textContent = c.state === "Done" ? `Cancelled${c.error ? ` (${c.error})` : ""}.` : `Not cancelled: ${c.error}`;
      return;
    } catch (e) {
      note.textContent = e.message;
      return;
    }
  }
}

// --- Run: submit a batch script through the API ---------------------------------------------

// Offered only when the flag EnableHPCJobs is on and the project's data plane is Healthy and
// reports Slurm (the API decides both again on submit).
async function runButton(project, into, onSubmitted) {
  let flags, config, planes, workspaces, templates;
  try {
    [flags, config, planes, workspaces, { templates }] = await Promise.all([
      api("GET", "/api/v1/flags"), api("GET", `/api/v1/projects/${project}`),
      api("GET", "/api/v1/dataplanes"), api("GET", `/api/v1/projects/${project}/workspaces`),
      api("GET", `/api/v1/projects/${project}/templates`)]);
  } catch (e) {
    return;  // an unconfigured project has no data plane to run on: no button
  }
  const plane = planes.dataPlanes.find((d) => d.name === config.dataPlane);
  if (!flags.flags.EnableHPCJobs || !plane || !plane.slurm.offered) return;
  const mine = workspaces.workspaces.filter((w) => w.user === state.me.subject && w.desired === "Running");
  const open = el("button", { type: "button", class: "primary", id: "run-button", "aria-expanded": "false" }, "Run…");
  into.replaceChildren(open);
  open.addEventListener("click", () => {
    open.setAttribute("aria-expanded", "true");
    into.replaceChildren(runForm(project, mine, templates, () => {
      into.replaceChildren(open);
      open.setAttribute("aria-expanded", "false");
      onSubmitted();
    }));
    $("#run-script").focus();
  });
}

const RUN_OPTIONS = [["jobName", "Job name"], ["nodes", "Nodes"], ["ntasks", "Tasks"], ["cpusPerTask", "CPUs per task"],
  ["mem", "Memory (e.g. 4G)"], ["time", "Time limit (e.g. 01:00:00)"], ["array", "Array (e.g. 0-9)"],
  ["output", "Output file"], ["error", "Error file"]];

// Labelled controls whose error line the API's refusal of their field fills: `errors` maps a
// field key (script, opt-nodes, ...) to that line.
function fieldMaker(prefix, errors) {
  return (id, label, control) => {
    errors[id] = el("span", { class: "error", id: `${prefix}err-${id}`, role: "alert" });
    control.setAttribute("aria-describedby", `${prefix}err-${id}`);
    return el("label", { for: control.id }, label, control, errors[id]);
  };
}
// The option inputs `${idPrefix}opt-<key>`, and reading them back as the API's options object.
const optionInputs = (idPrefix, field) => RUN_OPTIONS.map(([k, label]) =>
  field(`opt-${k}`, label, el("input", { id: `${idPrefix}opt-${k}`, name: k, size: 12 })));
function readOptions(idPrefix) {
  const options = {};
  for (const [k] of RUN_OPTIONS) {
    const v = $(`#${idPrefix}opt-${k}`).value.trim();
    if (v) options[k] = v;
  }
  return options;
}
function fillOptions(idPrefix, options) {
  for (const [k] of RUN_OPTIONS) $(`#${idPrefix}opt-${k}`).value = options && options[k] !== undefined ? options[k] : "";
}
// Shows an ApiError next to the field it names, else in `result`.
function showFieldError(e, errors, result) {
  const key = e.field && e.field.startsWith("options.") ? `opt-${e.field.slice(8)}` : e.field;
  if (key && errors[key]) errors[key].textContent = e.message;
  else result.textContent = e.message;
  result.className = "error";
}

function runForm(project, workspaces, templates, done) {
  const errors = {};
  const field = fieldMaker("", errors);
  const ws = el("select", { id: "run-workspace", required: true },
    workspaces.map((w) => el("option", { value: w.id }, `${w.id} (${w.phase})`)));
  const script = el("textarea", { id: "run-script", rows: 8, cols: 70, required: true, spellcheck: "false" });
  script.value = "#!/bin/bash\nsrun hostname\n";
  // A template fills the script and options; what is submitted is what the form then shows.
  const template = el("select", { id: "run-template", onchange: () => {
    const t = templates.find((x) => x.name === template.value);
    if (!t) return;
    script.value = t.script;
    fillOptions("run-", t.options);
  } }, el("option", { value: "" }, "(none)"),
  templates.map((t) => el("option", { value: t.name }, t.description ? `${t.name}: ${t.description}` : t.name)));
  const opts = optionInputs("run-", field);
  const result = el("p", { id: "run-result", role: "status" });
  const form = el("form", { class: "filters", id: "run-form", onsubmit: async (ev) => {
    ev.preventDefault();
    for (const e of Object.values(errors)) e.textContent = "";
    result.textContent = "";
    const options = readOptions("run-");
    try {
      const sub = await api("POST", `/api/v1/projects/${project}/jobs`, { workspace: ws.value, script: script.value, options });
      toast(`Submitted (${sub.id}); the job appears with source api once its data plane runs sbatch.`);
      done();
    } catch (e) {
      showFieldError(e, errors, result);  // the API names the field it refuses
    }
  } },
  workspaces.length ? field("workspace", "Workspace", ws)
    : el("p", { class: "error" }, "You have no running workspace in this project: launch one first (Workspaces)."),
  templates.length ? field("template", "Template", template) : null,
  field("script", "Batch script", script), ...opts,
  el("button", { type: "submit", class: "primary", id: "run-submit", disabled: !workspaces.length }, "Submit"),
  el("button", { type: "button", onclick: done }, "Cancel"), result);
  return el("div", { class: "detail" }, el("h2", {}, "Run a batch job"), form);
}

// --- charts (from /jobs/stats: aggregated by the store) ----------------------------------------

const STATE_COLORS = { COMPLETED: "#1a7f37", FAILED: "#b42318", CANCELLED: "#8a5a00", RUNNING: "#0a58ca",
  PENDING: "#6f42c1", TIMEOUT: "#d1242f", NODE_FAIL: "#cf222e", OUT_OF_MEMORY: "#a40e26" };
const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs = {}, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

// Bars: [{label, parts: [{key, value}]}] stacked; accessible through a title and a table fallback.
function barChart(title, bars, colorOf) {
  const W = 480, H = 180, pad = 24;
  const max = Math.max(1, ...bars.map((b) => b.parts.reduce((s, p) => s + p.value, 0)));
  const bw = (W - pad) / Math.max(1, bars.length);
  const g = svg("svg", { viewBox: `0 0 ${W} ${H + 20}`, role: "img", "aria-label": title });
  bars.forEach((b, i) => {
    let y = H;
    for (const p of b.parts) {
      const h = (p.value / max) * (H - 10);
      y -= h;
      g.append(svg("rect", { x: pad + i * bw + 1, y, width: Math.max(1, bw - 2), height: h, fill: colorOf(p.key) },
        svg("title", {}, `${b.label} ${p.key}: ${Number(p.value.toFixed ? p.value.toFixed(2) : p.value)}`)));
    }
  });
  g.append(svg("text", { x: 0, y: 12, "font-size": 11 }, String(Math.round(max * 100) / 100)));
  if (bars.length) {
    g.append(svg("text", { x: pad, y: H + 16, "font-size": 11 }, bars[0].label));
    g.append(svg("text", { x: W, y: H + 16, "font-size": 11, "text-anchor": "end" }, bars[bars.length - 1].label));
  }
  const keys = [...new Set(bars.flatMap((b) => b.parts.map((p) => p.key)))];
  const legend = el("div", { class: "legend" }, keys.map((k) => {
    const s = el("span", {}, k);
    s.style.color = colorOf(k);
    return s;
  }));
  return el("figure", { class: "chart" }, el("h2", {}, title), g, legend);
}

async function loadCharts(project, into) {
  const to = Math.floor(Date.now() / 1000) + 1, from = to - 7 * 86400;
  try {
    const s = await api("GET", `/api/v1/projects/${project}/jobs/stats?from=${from}&to=${to}&bucket=21600`);
    const day = (t) => new Date(t * 1000).toISOString().slice(5, 13).replace("T", " ") + "h";
    const users = [...new Set(s.nodeHours.map((u) => u.user))];
    const palette = ["#0a58ca", "#1a7f37", "#8a5a00", "#6f42c1", "#b42318", "#0f766e", "#9a3412", "#334155"];
    const userColor = (u) => palette[users.indexOf(u) % palette.length];
    const days = [...new Set(s.nodeHours.map((u) => u.day))];
    into.replaceChildren(
      barChart("Jobs per state, last 7 days (6 h buckets)",
        s.states.map((b) => ({ label: day(b.start), parts: Object.entries(b.states).map(([key, value]) => ({ key, value })) })),
        (k) => STATE_COLORS[k] || "#57606a"),
      barChart("Queue wait (submit → start)",
        s.queueWait.map((w) => ({ label: w.range, parts: [{ key: w.range, value: w.jobs }] })), () => "#0a58ca"),
      barChart("Node-hours per user per day",
        days.map((d) => ({ label: new Date(d * 1000).toISOString().slice(5, 10),
          parts: s.nodeHours.filter((u) => u.day === d).map((u) => ({ key: u.user, value: u.nodeHours })) })),
        userColor));
  } catch (e) {
    into.replaceChildren(el("p", { class: "error" }, `Charts: ${e.message}`));
  }
}

// --- workspaces ----------------------------------------------------------------------------------

async function workspacesPage() {
  if (!state.project) return noProject();
  const project = state.project;
  main.replaceChildren(el("h1", {}, `Workspaces — ${project}`), el("p", { class: "muted" }, "Loading…"));
  const body = el("tbody", {});
  // While a workspace is on its way (Pending, Stopping), its row follows it every 3 s; the
  // launch form above is left as the user is filling it.
  const load = async () => {
    const { workspaces } = await api("GET", `/api/v1/projects/${project}/workspaces`);
    const rows = workspaces.map((w) => {
      const mine = w.user === state.me.subject || state.me.role === "admin";
      const stop = mine && w.desired === "Running"
        ? el("button", { type: "button", id: `stop-${w.id}`, onclick: async () => {
          if (!confirm(`Stop workspace ${w.id}? Its login pod and idle workers go; running jobs finish first.`)) return;
          try {
            await api("DELETE", `/api/v1/projects/${project}/workspaces/${w.id}`);
            toast(`Workspace ${w.id} is stopping.`);
            load().catch((e) => toast(e.message));
          } catch (e) { toast(e.message); }
        } }, "Stop")
        : "";
      return el("tr", { "data-workspace": w.id }, el("td", {}, w.id), el("td", {}, w.user), el("td", {}, w.tier),
        el("td", {}, w.dataPlane), el("td", { class: "phase" }, w.phase), el("td", {}, w.message || ""),
        el("td", {}, String(w.maxWorkers)),
        el("td", {}, el("code", {}, `hpcplane workspace exec ${w.id} -- bash`)), el("td", {}, stop));
    });
    body.replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { colspan: 9, class: "muted" }, "No workspaces."))]));
    clearInterval(state.refreshTimer);
    const moving = workspaces.some((w) => w.phase === "Pending" || w.phase === "Stopping" ||
      (w.desired === "Stopped" && w.phase !== "Stopped" && w.phase !== "Failed"));
    if (moving) state.refreshTimer = setInterval(() => load().catch(() => clearInterval(state.refreshTimer)), 3000);
  };
  try {
    const form = await launchForm(project);
    await load();
    main.replaceChildren(el("h1", {}, `Workspaces — ${project}`), form,
      el("div", { class: "table-wrap" }, el("table", { id: "workspaces-table" },
        el("thead", {}, el("tr", {}, ["Id", "User", "Tier", "Data plane", "Phase", "Message", "Max workers", "Open a shell", ""]
          .map((h) => el("th", { scope: "col" }, h)))), body)));
  } catch (e) {
    main.replaceChildren(el("h1", {}, `Workspaces — ${project}`), el("p", { class: "error", role: "alert" }, e.message));
  }
}

// A launch form from the project's configuration (its tiers and worker limit).
async function launchForm(project) {
  let config;
  try {
    config = await api("GET", `/api/v1/projects/${project}`);
  } catch (e) {
    return el("p", { class: "muted" }, e.message);
  }
  const tier = el("select", { id: "launch-tier", name: "tier" },
    config.tiers.map((t) => el("option", { value: t, selected: t === config.defaultTier }, t)));
  const workers = el("input", { id: "launch-workers", name: "maxWorkers", type: "number", min: 1,
    max: config.maxWorkers || undefined, value: Math.min(2, config.maxWorkers || 2) });
  const error = el("p", { class: "error", role: "alert", id: "launch-error" });
  return el("form", { class: "filters", id: "launch-form", "aria-label": "Launch a workspace", onsubmit: async (ev) => {
    ev.preventDefault();
    error.textContent = "";
    try {
      const w = await api("POST", `/api/v1/projects/${project}/workspaces`, { tier: tier.value, maxWorkers: Number(workers.value) });
      toast(`Workspace ${w.id} launched on ${w.dataPlane}.`);
      workspacesPage();
    } catch (e) {
      error.textContent = e.message;
    }
  } },
  el("label", { for: "launch-tier" }, "Tier", tier), el("label", { for: "launch-workers" }, "Max workers", workers),
  el("button", { type: "submit", class: "primary", id: "launch-submit" }, "Launch workspace"), error);
}

// --- admin: flags and tokens ------------------------------------------------------------------------

async function adminPage() {
  main.replaceChildren(el("h1", {}, "Admin"), el("p", { class: "muted" }, "Loading…"));
  try {
    const [{ flags }, { tokens }] = await Promise.all([api("GET", "/api/v1/flags"), api("GET", "/api/v1/tokens")]);
    const flagRows = Object.entries(flags).map(([name, on]) => {
      const box = el("input", { type: "checkbox", id: `flag-${name}`, checked: on, onchange: async (ev) => {
        try {
          await api("PUT", `/api/v1/flags/${name}`, { value: ev.target.checked });
          toast(`${name} is ${ev.target.checked ? "on" : "off"}.`);
        } catch (e) {
          ev.target.checked = !ev.target.checked;
          toast(e.message);
        }
      } });
      return el("li", {}, el("label", { for: `flag-${name}` }, box, ` ${name}`));
    });
    const tokenBody = el("tbody", {});
    // The table is redrawn in place after a change, so a secret just shown above stays there.
    const showTokens = (list) => tokenBody.replaceChildren(...list.map((t) => el("tr", {}, el("td", {}, t.id),
      el("td", {}, t.subject), el("td", {}, t.role),
      el("td", {}, (t.projects || []).join(", ")), el("td", {}, fmtTime(t.createdAt)),
      el("td", {}, t.expiresAt ? fmtTime(t.expiresAt) : "never"), el("td", {}, t.lastUsed ? fmtTime(t.lastUsed) : "—"),
      el("td", {}, t.revokedAt ? `revoked ${fmtTime(t.revokedAt)}` : el("button", { type: "button", onclick: async () => {
        if (!confirm(`Revoke token ${t.id} of ${t.subject}?`)) return;
        try { await api("DELETE", `/api/v1/tokens/${t.id}`); await reloadTokens(); } catch (e) { toast(e.message); }
      } }, "Revoke")))));
    const reloadTokens = async () => showTokens((await api("GET", "/api/v1/tokens")).tokens);
    showTokens(tokens);
    const templates = el("section", { id: "templates-admin", "aria-labelledby": "templates-heading" });
    const project = el("section", { id: "project-admin", "aria-labelledby": "project-heading" });
    main.replaceChildren(el("h1", {}, "Admin"), el("h2", {}, "Feature flags"), el("ul", { id: "flags" }, flagRows),
      project, templates, el("h2", {}, "API tokens"), tokenForm(() => reloadTokens().catch((e) => toast(e.message))),
      el("div", { class: "table-wrap" }, el("table", { id: "tokens-table" },
        el("thead", {}, el("tr", {}, ["Id", "Subject", "Role", "Projects", "Created", "Expires", "Last used", ""]
          .map((h) => el("th", { scope: "col" }, h)))), tokenBody)));
    projectAdmin(project, state.project);
    templatesAdmin(templates, state.project);
  } catch (e) {
    main.replaceChildren(el("h1", {}, "Admin"), el("p", { class: "error", role: "alert" }, e.message));
  }
}

const listText = (v) => (v || []).join(", ");
const listOf = (text) => text.split(",").map((x) => x.trim()).filter(Boolean);

// A new API token: its secret is shown here once (the server keeps only its digest).
function tokenForm(onCreated) {
  const errors = {};
  const field = fieldMaker("tok-", errors);
  const subject = el("input", { id: "tok-subject", required: true, size: 16 });
  const role = el("select", { id: "tok-role" }, ["user", "admin", "agent", "metrics"].map((r) => el("option", { value: r }, r)));
  const projects = el("input", { id: "tok-projects", size: 24, placeholder: "astro, bio" });
  const ttl = el("input", { id: "tok-ttl", size: 8, placeholder: "30d" });
  const result = el("p", { id: "tok-result", role: "status" });
  const shown = el("output", { id: "new-token", class: "secret" });
  return el("form", { class: "filters", id: "tok-form", "aria-label": "Create an API token", onsubmit: async (ev) => {
    ev.preventDefault();
    for (const e of Object.values(errors)) e.textContent = "";
    result.textContent = "";
    shown.textContent = "";
    const body = { subject: subject.value.trim(), role: role.value, projects: listOf(projects.value) };
    if (ttl.value.trim()) body.ttl = ttl.value.trim();
    try {
      const t = await api("POST", "/api/v1/tokens", body);
      shown.textContent = t.token;
      result.className = "";
      result.textContent = `Token ${t.id} for ${t.subject}: copy it now, it is not shown again.`;
      onCreated();
    } catch (e) {
      showFieldError(e, errors, result);
    }
  } }, field("subject", "Subject", subject), field("role", "Role", role), field("projects", "Projects", projects),
  field("ttl", "Expires after", ttl), el("button", { type: "submit", class: "primary", id: "tok-create" }, "Create token"),
  result, shown);
}

// The selected project's configuration (PUT /projects/{p}): where its workspaces run and what
// they may be. An admin configures a new project by typing its name.
async function projectAdmin(into, selected) {
  let planes = [];
  try { ({ dataPlanes: planes } = await api("GET", "/api/v1/dataplanes")); } catch (e) { /* listed by name only */ }
  let config = null;
  if (selected) {
    try { config = await api("GET", `/api/v1/projects/${selected}`); } catch (e) { config = null; }
  }
  const errors = {};
  const field = fieldMaker("prj-", errors);
  const input = (id, value, attrs = {}) => el("input", { id: `prj-${id}`, value: value ?? "", size: 14, ...attrs });
  const name = input("name", selected, { required: true, pattern: "[a-z][a-z0-9\\-]{0,62}" });
  const plane = el("select", { id: "prj-dataPlane" }, planes.map((d) =>
    el("option", { value: d.name, selected: config && config.dataPlane === d.name }, `${d.name} (${d.state})`)));
  const tiers = input("tiers", config ? listText(config.tiers) : "small");
  const defaultTier = input("defaultTier", config ? config.defaultTier : "small");
  const maxWorkers = input("maxWorkers", config ? config.maxWorkers : 2, { type: "number", min: 1 });
  const idle = input("idleTimeout", config ? `${config.idleTimeoutSeconds}s` : "5m");
  const lifetime = input("tokenLifetime", config ? `${config.tokenLifetimeSeconds}s` : "8h");
  const datasets = input("datasets", config ? listText(config.datasets) : "", { size: 20 });
  const admins = input("sysAdmins", config ? listText(config.sysAdmins) : "", { size: 20 });
  const result = el("p", { id: "prj-result", role: "status" });
  const form = el("form", { class: "filters", id: "prj-form", "aria-label": "Project configuration", onsubmit: async (ev) => {
    ev.preventDefault();
    for (const e of Object.values(errors)) e.textContent = "";
    result.textContent = "";
    const body = { dataPlane: plane.value, tiers: listOf(tiers.value), defaultTier: defaultTier.value.trim(),
      maxWorkers: Number(maxWorkers.value), idleTimeout: idle.value.trim(), tokenLifetime: lifetime.value.trim(),
      sysAdmins: listOf(admins.value) };
    if (listOf(datasets.value).length) body.datasets = listOf(datasets.value);
    try {
      const p = await api("PUT", `/api/v1/projects/${encodeURIComponent(name.value.trim())}`, body);
      toast(`Project ${p.name} saved.`);
    } catch (e) {
      showFieldError(e, errors, result);
    }
  } }, field("name", "Project", name), field("dataPlane", "Data plane", plane), field("tiers", "Tiers", tiers),
  field("defaultTier", "Default tier", defaultTier), field("maxWorkers", "Max workers", maxWorkers),
  field("idleTimeout", "Idle timeout", idle), field("tokenLifetime", "Token lifetime", lifetime),
  field("datasets", "Datasets", datasets), field("sysAdmins", "Slurm admins", admins),
  el("button", { type: "submit", class: "primary", id: "prj-save" }, "Save project"), result);
  into.replaceChildren(el("h2", { id: "project-heading" }, "Project configuration"),
    planes.length ? form : el("p", { class: "muted" }, "No data plane has reported yet: a project needs one to run on."));
}

// The selected project's job templates: listed with Edit and Delete, and a form that creates or
// replaces one (PUT /projects/{p}/templates/{name}); members pick them in the Run form.
async function templatesAdmin(into, project) {
  const heading = el("h2", { id: "templates-heading" }, `Job templates of ${project || "—"}`);
  if (!project) return into.replaceChildren(heading, el("p", { class: "muted" }, "No project is configured."));
  let templates;
  try {
    ({ templates } = await api("GET", `/api/v1/projects/${project}/templates`));
  } catch (e) {
    return into.replaceChildren(heading, el("p", { class: "error", role: "alert" }, e.message));
  }
  const errors = {};
  const field = fieldMaker("tpl-", errors);
  const name = el("input", { id: "tpl-name", required: true, size: 20, pattern: "[a-z][a-z0-9\\-]{0,62}" });
  const description = el("input", { id: "tpl-description", size: 40, maxlength: 500 });
  const script = el("textarea", { id: "tpl-script", rows: 6, cols: 70, required: true, spellcheck: "false" });
  script.value = "#!/bin/bash\nsrun hostname\n";
  const result = el("p", { id: "tpl-result", role: "status" });
  const edit = (t) => {
    name.value = t.name;
    description.value = t.description;
    script.value = t.script;
    fillOptions("tpl-", t.options);
    name.focus();
  };
  const rows = templates.map((t) => el("tr", {}, el("td", {}, t.name), el("td", {}, t.description),
    el("td", {}, Object.entries(t.options).map(([k, v]) => `${k}=${v}`).join(" ")),
    el("td", {}, t.updatedBy), el("td", {}, fmtTime(t.updatedAt)),
    el("td", {}, el("button", { type: "button", onclick: () => edit(t) }, "Edit"), " ",
      el("button", { type: "button", "aria-label": `Delete template ${t.name}`, onclick: async () => {
        if (!confirm(`Delete template ${t.name} of ${project}?`)) return;
        try { await api("DELETE", `/api/v1/projects/${project}/templates/${t.name}`); templatesAdmin(into, project); }
        catch (e) { toast(e.message); }
      } }, "Delete"))));
  const form = el("form", { class: "filters", id: "tpl-form", onsubmit: async (ev) => {
    ev.preventDefault();
    for (const e of Object.values(errors)) e.textContent = "";
    result.textContent = "";
    try {
      await api("PUT", `/api/v1/projects/${project}/templates/${encodeURIComponent(name.value.trim())}`,
        { description: description.value, script: script.value, options: readOptions("tpl-") });
      toast(`Template ${name.value.trim()} saved.`);
      templatesAdmin(into, project);
    } catch (e) {
      showFieldError(e, errors, result);
    }
  } }, field("name", "Name", name), field("description", "Description", description),
  field("script", "Batch script", script), ...optionInputs("tpl-", field),
  el("button", { type: "submit", class: "primary", id: "tpl-save" }, "Save template"), result);
  into.replaceChildren(heading,
    el("div", { class: "table-wrap" }, el("table", { id: "templates-table" },
      el("thead", {}, el("tr", {}, ["Name", "Description", "Options", "By", "Updated", ""]
        .map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: 6, class: "muted" }, "No templates yet."))))),
    form);
}

// --- data planes (admins) ------------------------------------------------------------------------

async function dataPlanesPage() {
  main.replaceChildren(el("h1", {}, "Data planes"), el("p", { class: "muted" }, "Loading…"));
  try {
    const { dataPlanes } = await api("GET", "/api/v1/dataplanes");
    const now = Date.now() / 1000;
    const rows = dataPlanes.map((d) => el("tr", {}, el("td", {}, d.name), el("td", {}, d.state),
      el("td", {}, `${Math.max(0, Math.round(now - d.lastReport))} s ago`),
      el("td", {}, d.slurm.offered ? `Slurm ${d.slurm.version}` : "no Slurm offered"),
      el("td", {}, Object.entries(d.componentVersions).map(([k, v]) => `${k} ${v}`).join(", ")),
      el("td", {}, (d.reasons || []).join("; "))));
    main.replaceChildren(el("h1", {}, "Data planes"),
      el("div", { class: "table-wrap" }, el("table", { id: "dataplanes-table" },
        el("thead", {}, el("tr", {}, ["Name", "State", "Last report", "Slurm", "Components", "Reasons"]
          .map((h) => el("th", { scope: "col" }, h)))),
        el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: 6, class: "muted" }, "No data plane has reported."))))));
  } catch (e) {
    main.replaceChildren(el("h1", {}, "Data planes"), el("p", { class: "error", role: "alert" }, e.message));
  }
}

// --- start ---------------------------------------------------------------------------------------

(async () => {
  try {
    await signedIn(await api("GET", "/api/v1/session"));
  } catch (e) {
    showSignIn(e.status === 401 ? "" : e.message);
  }
})();
